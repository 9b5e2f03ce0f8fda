#include "cost/roofline.hpp"

#include <gtest/gtest.h>

#include "cost/gemm_tiling.hpp"
#include "model/op_builders.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

namespace inferlab {
namespace {

using testing::unit_factors;

// 4096^3 on 132 SMs: 128x256 tiles give 32 x 16 = 512 tiles, 4 waves of 132 (528 slots):
// occupied = 528 x 2 x 128 x 256 x 4096 = 141,733,920,768 FLOPs.
TEST(GemmTiling, WaveQuantization) {
  GemmTiling t = choose_gemm_tiling({4096, 4096, 4096, 1}, 132);
  EXPECT_EQ(t.waves, 4);
  EXPECT_EQ(t.split_k, 1);
  EXPECT_DOUBLE_EQ(t.occupied_flops, 141'733'920'768.0);
}

// M = 1 pads to a 64-row tile; 32 tiles of 64x128 leave SMs idle, so K splits 4 ways into 128
// units in one wave: 132 x 2 x 64 x 128 x 1024 = 2,214,592,512 occupied FLOPs.
TEST(GemmTiling, SkinnyGemmPadsAndSplitsK) {
  GemmTiling t = choose_gemm_tiling({1, 4096, 4096, 1}, 132);
  EXPECT_EQ(t.tile_m, 64);
  EXPECT_EQ(t.tile_n, 128);
  EXPECT_EQ(t.split_k, 4);
  EXPECT_EQ(t.waves, 1);
  EXPECT_DOUBLE_EQ(t.occupied_flops, 2'214'592'512.0);
}

// Add of 32768 x 4096 bf16: 3 x 268,435,456 bytes = 805,306,368 bytes at 3.35 TB/s
// = 240.390 us, plus one 2 us kernel latency.
TEST(Roofline, MemoryBoundElementwise) {
  RooflineCostModel cost(load_hardware("h100-sxm", kProfileNone), unit_factors(2e-6));
  OpCost c = cost.price(make_add_op("add", 32768, 4096, DType::bf16));
  EXPECT_EQ(c.bound, Bound::memory);
  EXPECT_NEAR(c.time_s, 805'306'368.0 / 3.35e12 + 2e-6, 1e-12);
  EXPECT_EQ(c.op_class, OpClass::elementwise);
}

// 8192^3 bf16: 2048 tiles of 128x256 -> 16 waves (2112 slots) -> 1,133,871,366,144 occupied
// FLOPs at 989.4 TFLOP/s = 1.14602 ms; efficiency = 8192^3 x 2 / occupied = 0.969697.
TEST(Roofline, ComputeBoundGemmWithWaveLoss) {
  RooflineCostModel cost(load_hardware("h100-sxm", kProfileNone), unit_factors());
  Op op = make_gemm_op("g", 8192, 8192, 8192, DType::bf16, DType::bf16, DType::bf16, DType::bf16);
  OpCost c = cost.price(op);
  EXPECT_EQ(c.bound, Bound::compute);
  EXPECT_NEAR(c.time_s, 1'133'871'366'144.0 / 989.4e12, 1e-12);
  EXPECT_NEAR(c.efficiency(), 1'099'511'627'776.0 / 1'133'871'366'144.0, 1e-9);
}

TEST(Roofline, DelayFactorScalesTheRoof) {
  DelayFactors f = unit_factors();
  RooflineCostModel plain(load_hardware("h100-sxm", kProfileNone), f);
  apply_delay_factor_overrides(f, "elementwise=1.5,gemm=2");
  RooflineCostModel slowed(load_hardware("h100-sxm", kProfileNone), f);
  Op add = make_add_op("add", 8192, 4096, DType::bf16);
  EXPECT_NEAR(slowed.price(add).time_s, 1.5 * plain.price(add).time_s, 1e-15);
  EXPECT_THROW(apply_delay_factor_overrides(f, "gemm"), InputError);
  EXPECT_THROW(apply_delay_factor_overrides(f, "tensor=2"), InputError);
  EXPECT_THROW(apply_delay_factor_overrides(f, "gemm=-1"), InputError);
  EXPECT_THROW(apply_delay_factor_overrides(f, "gemm=abc"), InputError);
}

TEST(Roofline, TinyKernelIsLatencyBound) {
  RooflineCostModel cost(load_hardware("h100-sxm", kProfileNone), unit_factors(2e-6));
  OpCost c = cost.price(make_rmsnorm_op("n", 1, 4096, DType::bf16));
  EXPECT_EQ(c.bound, Bound::latency);
  EXPECT_LT(c.efficiency(), 0.01);
}

TEST(Roofline, SmallMGemmIsGemvClassAndMemoryBound) {
  RooflineCostModel cost(load_hardware("h100-sxm", kProfileNone), unit_factors());
  Op op = make_gemm_op("g", 1, 4096, 4096, DType::bf16, DType::bf16, DType::bf16, DType::bf16);
  OpCost c = cost.price(op);
  EXPECT_EQ(c.op_class, OpClass::gemv);
  EXPECT_EQ(c.bound, Bound::memory);
}

// Ring all-reduce of 1 MB over 2 devices: 2 steps moving 0.5 MB each at 450 GB/s = 2.222 us,
// plus 2 hops x 1 us.
TEST(Roofline, AllReduceRing) {
  RooflineCostModel cost(load_hardware("h100-sxm", kProfileNone), unit_factors());
  OpCost c = cost.price(make_all_reduce_op("ar", 1e6, 2));
  EXPECT_EQ(c.bound, Bound::communication);
  EXPECT_NEAR(c.time_s, 1e6 / 450e9 + 2e-6, 1e-12);
  EXPECT_DOUBLE_EQ(cost.price(make_all_reduce_op("ar", 1e6, 1)).time_s, 0.0);
}

// The shipped H200 profile holds the probe's NCCL curves over two H200s (all-reduce of 4 MiB:
// 51.8345 us, 16 MiB: 95.5295 us, smallest (4 KiB): 25.0480 us, host launch and sync). A
// collective between measured sizes costs the curve above that floor plus the sheet's 2 hops x
// 1 us: 16 MiB = 95.5295 - 25.0480 + 2 = 72.4815 us; 8 MiB, a third of the way from 4 to 16 MiB
// = 51.8345 + (95.5295 - 51.8345) / 3 - 25.0480 + 2 = 43.3515 us. Four devices were not
// measured: the link's ring formula stays.
TEST(Roofline, MeasuredNcclCurveReplacesTheLinkBandwidth) {
  // The host-timed group-call curve (the profile's "interconnect"), where no in-graph curve is.
  HardwareSpec host_timed = load_hardware("h200");
  host_timed.profile->in_stream_collectives = {};
  RooflineCostModel cost(host_timed, unit_factors());
  const double floor_s = 2.5048000001248738e-05, mib4_s = 5.183450000245671e-05,
               mib16_s = 9.552949999758198e-05;
  OpCost c = cost.price(make_all_reduce_op("ar", 16.0 * (1 << 20), 2));
  EXPECT_EQ(c.bound, Bound::communication);
  EXPECT_NEAR(c.time_s, mib16_s - floor_s + 2e-6, 1e-12);
  EXPECT_NEAR(cost.price(make_all_reduce_op("ar", 8.0 * (1 << 20), 2)).time_s,
              mib4_s + (mib16_s - mib4_s) / 3.0 - floor_s + 2e-6, 1e-12);
  // Below the smallest size only the hops remain.
  EXPECT_NEAR(cost.price(make_all_reduce_op("ar", 1024, 2)).time_s, 2e-6, 1e-12);
  const double ring4_s = 2.0 * 3.0 / 4.0 * 16.0 * (1 << 20) / 450e9 + 6e-6;
  EXPECT_NEAR(cost.price(make_all_reduce_op("ar", 16.0 * (1 << 20), 4)).time_s, ring4_s, 1e-12);
  // Without the profile, the sheet's link prices it: 16 MiB at 450 GB/s + 2 us.
  RooflineCostModel sheet(load_hardware("h200", kProfileNone), unit_factors());
  EXPECT_NEAR(sheet.price(make_all_reduce_op("ar", 16.0 * (1 << 20), 2)).time_s,
              16.0 * (1 << 20) / 450e9 + 2e-6, 1e-12);
}

// The shipped H200 profile's "collectives": NCCL per call inside a CUDA graph over 2 and 4 GPUs
// (2: 256 B 5.79392 us, 8 MiB 48.7015 us (every power of two since MEASUREMENTS §42), 16 MiB
// 81.284 us; 4: 256 B 8.93388 us, 16 MiB 106.009 us). Such a call is priced whole, with no hops
// added: 12 MiB over 2, half way from 8 to 16 MiB = (48.7015 + 81.284) / 2 = 64.99275 us; below
// the smallest size, the smallest size's time.
TEST(Roofline, InGraphNcclCurvePricesTheWholeCall) {
  RooflineCostModel cost(load_hardware("h200"), unit_factors());
  EXPECT_NEAR(cost.price(make_all_reduce_op("ar", 16.0 * (1 << 20), 2)).time_s, 81.284e-6, 1e-12);
  EXPECT_NEAR(cost.price(make_all_reduce_op("ar", 8.0 * (1 << 20), 2)).time_s, 48.7015e-6, 1e-12);
  EXPECT_NEAR(cost.price(make_all_reduce_op("ar", 12.0 * (1 << 20), 2)).time_s, 64.99275e-6, 1e-12);
  EXPECT_NEAR(cost.price(make_all_reduce_op("ar", 64, 2)).time_s, 5.79392e-6, 1e-12);
  EXPECT_NEAR(cost.price(make_all_reduce_op("ar", 16.0 * (1 << 20), 4)).time_s, 106.009e-6, 1e-12);
  // Eight GPUs were not measured: the link's ring formula.
  EXPECT_NEAR(cost.price(make_all_reduce_op("ar", 16.0 * (1 << 20), 8)).time_s,
              2.0 * 7.0 / 8.0 * 16.0 * (1 << 20) / 450e9 + 14e-6, 1e-12);
}

TEST(Roofline, MissingMatrixFormatIsAnInputError) {
  RooflineCostModel cost(load_hardware("a100-80g"), unit_factors());
  Op op = make_gemm_op("g", 64, 64, 64, DType::fp8, DType::fp8, DType::bf16, DType::fp8);
  EXPECT_THROW(cost.price(op), InputError);
}

TEST(DelayFactors, ShippedFileIsAMeasuredFit) {
  DelayFactors f = load_spec_delay_factors();
  EXPECT_NE(f.source.find("inferlab fit"), std::string::npos);
  for (int i = 0; i < kOpClassCount; ++i) {
    EXPECT_GE(f.factor[i], 1.0) << op_class_name(static_cast<OpClass>(i));
    EXPECT_LT(f.factor[i], 5.0);
  }
}

}  // namespace
}  // namespace inferlab
