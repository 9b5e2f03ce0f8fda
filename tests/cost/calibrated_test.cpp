#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "cost/calibrated/calibrated_cost.hpp"
#include "cost/calibrated/calibration_transfer.hpp"
#include "cost/calibrated/gemm_tile_catalogue.hpp"
#include "cost/cost_loader.hpp"
#include "model/op_builders.hpp"
#include "test_support.hpp"
#include "util/error.hpp"
#include "util/nelder_mead.hpp"

namespace inferlab {
namespace {

using P = CalibParam;

// Parameters that make the arithmetic easy to follow by hand: full efficiency, no fixed costs.
CalibratedParams plain_params() {
  CalibratedParams p = initial_calibrated_params();
  for (P q : {P::gemm_compute_efficiency, P::gemm_memory_efficiency, P::attn_prefill_efficiency,
              P::attn_decode_efficiency, P::norm_efficiency, P::elementwise_efficiency,
              P::softmax_efficiency, P::gemm_unaligned_efficiency, P::gemm_offset32_efficiency,
              P::gemm_offset64_efficiency}) {
    p[q] = 1.0;
  }
  for (P q : {P::gemm_fixed_s, P::gemm_wave_fixed_s, P::splitk_reduce_s, P::attn_prefill_fixed_s,
              P::attn_prefill_wave_fixed_s, P::attn_decode_fixed_s, P::norm_fixed_s,
              P::elementwise_fixed_s, P::softmax_fixed_s, P::isolated_event_s,
              P::isolated_flush_fraction, P::isolated_launch_s}) {
    p[q] = 0.0;
  }
  p[P::gemm_operand_latency_s] = 2e-6;
  p[P::gemm_l2_feed_bps] = 1e16;  // out of the way unless a test sets it
  p[P::attn_decode_cta_stream_bps] = 1e15;
  p[P::softmax_row_stream_bps] = 1e15;
  p[P::norm_round_trip_s] = 0.0;
  p[P::gemm_clock_drop] = 0.0;
  p[P::gemm_overlap_exponent] = 64.0;  // the longer part alone, where the parts differ
  return p;
}

CalibratedCostModel plain_h100() {
  return CalibratedCostModel(load_hardware("h100-sxm", kProfileNone), plain_params(),
                             testing::unit_factors());
}

TEST(NelderMead, FindsTheMinimumOfAQuadratic) {
  auto f = [](const std::vector<double>& x) {
    return (x[0] - 3.0) * (x[0] - 3.0) + 2.0 * (x[1] + 1.0) * (x[1] + 1.0) + 0.5;
  };
  MinimizeResult r = minimize_nelder_mead(f, {0.0, 0.0}, 1.0, 2000);
  EXPECT_NEAR(r.x[0], 3.0, 1e-4);
  EXPECT_NEAR(r.x[1], -1.0, 1e-4);
  EXPECT_NEAR(r.value, 0.5, 1e-8);
}

// 4096^3 bf16 on the H100 sheet (132 SMs, 989.4 TFLOP/s): a 128x256 tile over K = 4096 is
// 2 x 128 x 256 x 4096 = 268,435,456 FLOPs at 989.4e12 / 132 per SM = 35.813 us, its operands
// (128 + 256) x 4096 x 2 B = 3.1 MB at 100 GB/s = 31.5 us (hidden). 512 tiles = 4 waves of 132:
// 143.25 us. Skinnier tiles waste less of the last wave but stream far more operand bytes per
// FLOP, so they lose. HBM: 100.7 MB at 3.35 TB/s = 30 us, hidden.
TEST(Calibrated, LargeGemmRunsInWavesOfTiles) {
  CalibratedCostModel model = plain_h100();
  Op op = make_gemm_op("g", 4096, 4096, 4096, DType::bf16, DType::bf16, DType::bf16, DType::bf16);
  GemmWavePlan plan = model.plan_gemm(op);
  EXPECT_EQ(plan.waves, 4);
  EXPECT_EQ(plan.split_k, 1);
  const double tile_s = 2.0 * 128 * 256 * 4096 / (989.4e12 / 132);
  EXPECT_NEAR(plan.time_s, 4 * tile_s, 1e-12);
  OpCost c = model.price(op);
  EXPECT_EQ(c.bound, Bound::compute);
  EXPECT_NEAR(c.time_s, 4 * tile_s, 1e-12);
}

// One token through a 4096 x 4096 bf16 weight is weight streaming. cuBLAS covers the one row
// with 8-row tiles of 64 columns: 64 tiles fill under half of the 132 SMs and k > 2048, so it
// splits k in two (128 CTAs) and adds a reduction over fp32 partials, 2 x 4 B x 4096 x 2 =
// 65,536 B more traffic: (33,570,816 + 65,536) B at 3.35 TB/s x 0.8 = 12.55 us, plus 2 us
// fixed and the reduction's 1.5 us.
TEST(Calibrated, GemvSplitsKWhenItsTilesUnderfillTheGpu) {
  CalibratedParams p = plain_params();
  p[P::gemm_fixed_s] = 2e-6;
  p[P::splitk_reduce_s] = 1.5e-6;
  p[P::gemm_memory_efficiency] = 0.8;
  CalibratedCostModel model(load_hardware("h100-sxm", kProfileNone), p, testing::unit_factors());
  Op op = make_gemm_op("g", 1, 4096, 4096, DType::bf16, DType::bf16, DType::bf16, DType::bf16);
  EXPECT_NEAR(op.bytes(), 4096.0 * 4096 * 2 + 4096 * 2 + 4096 * 2, 0.5);
  GemmWavePlan plan = model.plan_gemm(op);
  EXPECT_EQ(plan.tile_m, 8);
  EXPECT_EQ(plan.tile_n, 64);
  EXPECT_EQ(plan.split_k, 2);
  OpCost c = model.price(op);
  EXPECT_EQ(c.bound, Bound::memory);
  EXPECT_NEAR(c.time_s, (op.bytes() + 65'536.0) / (3.35e12 * 0.8) + 2e-6 + 1.5e-6, 1e-12);
  // k = 2048 is not split (cuBLAS: 2048 x 2048 ran unsplit on 32 tiles): the weights once.
  Op short_k = make_gemm_op("g", 1, 4096, 2048, DType::bf16, DType::bf16, DType::bf16, DType::bf16);
  EXPECT_EQ(model.plan_gemm(short_k).split_k, 1);
  EXPECT_NEAR(model.price(short_k).time_s, short_k.bytes() / (3.35e12 * 0.8) + 2e-6, 1e-12);
}

// A CTA keeps as many 64-element k-blocks of its operands in flight as its ring holds: an
// 8x64 tile's stage is 72 x 64 x 2 B = 9,216 B, 16 stages (the most cuBLAS uses) = 147,456 B;
// 64x64: 16,384 B, 13 stages in 212,992 B; 128x256: 49,152 B, 4 stages = 196,608 B. Over a
// 2 us load latency: 73.7, 106.5 and 98.3 GB/s.
TEST(Calibrated, SmallTilesStreamTheirOperandsSlowly) {
  EXPECT_NEAR(tile_operand_stream_bps(8, 64, 2.0, 2e-6), 147'456.0 / 2e-6, 1.0);
  EXPECT_NEAR(tile_operand_stream_bps(64, 64, 2.0, 2e-6), 212'992.0 / 2e-6, 1.0);
  EXPECT_NEAR(tile_operand_stream_bps(128, 256, 2.0, 2e-6), 196'608.0 / 2e-6, 1.0);
  // A tile whose one stage overflows the ring still has that stage in flight.
  EXPECT_NEAR(tile_operand_stream_bps(1024, 1024, 2.0, 2e-6), 262'144.0 / 2e-6, 1.0);
}

// Compute and HBM traffic overlapping in part: 3 and 4 us at p = 2 take 5 us; p = 1 adds
// them (7 us); at p = 64 the longer part alone remains (to 1e-7 relative at 3 : 4).
TEST(Calibrated, GemmComputeAndTrafficOverlapInPart) {
  EXPECT_NEAR(overlapped_s(3e-6, 4e-6, 2.0), 5e-6, 1e-15);
  EXPECT_NEAR(overlapped_s(3e-6, 4e-6, 1.0), 7e-6, 1e-15);
  EXPECT_NEAR(overlapped_s(3e-6, 4e-6, 64.0), 4e-6, 1e-12);
  EXPECT_DOUBLE_EQ(overlapped_s(2e-6, 0.0, 4.0), 2e-6);
  EXPECT_DOUBLE_EQ(overlapped_s(0.0, 0.0, 4.0), 0.0);
}

// With the clock sinking by 20% over a 1 ms settle: work of 1 ms at the boost clock takes
// 1 + 0.2 (1 - (1 - 1/e)) = 1 + 0.2 / e = 1.0736 ms; a 1 us GEMM is slowed by
// 0.2 x (1e-6 - 1e-3 (1 - e^-0.001)) = 0.1 ns; a long one approaches 1.2 x less 0.2 ms.
TEST(Calibrated, LongGemmsRunUnderASinkingClock) {
  EXPECT_NEAR(clock_dragged_s(1e-3, 0.2, 1e-3), 1e-3 * (1.0 + 0.2 / std::exp(1.0)), 1e-12);
  EXPECT_NEAR(clock_dragged_s(1e-6, 0.2, 1e-3), 1e-6 + 1.0e-10, 1e-12);
  EXPECT_NEAR(clock_dragged_s(1.0, 0.2, 1e-3), 1.2 - 0.2e-3, 1e-9);
  EXPECT_DOUBLE_EQ(clock_dragged_s(5e-6, 0.0, 1e-3), 5e-6);
}

// cuBLAS streams the operands of shapes whose k rows miss 32-byte sectors at a lower rate.
// k = 4000 (8,000-byte rows, on sectors) is untouched by the share; k = 4004 (8,008 bytes) is
// not. One token row with slow loads (20 us latency) is bound by every tile's operand stream
// (26 us at best), far above its MMA work and its HBM traffic (9.8 us): at share 0.5 every
// candidate tiling, and so the cheapest, takes twice as long.
TEST(Calibrated, RowsOffSectorsStreamAtTheUnalignedShare) {
  CalibratedParams p = plain_params();
  p[P::gemm_operand_latency_s] = 20e-6;
  CalibratedCostModel full(load_hardware("h100-sxm", kProfileNone), p, testing::unit_factors());
  p[P::gemm_unaligned_efficiency] = 0.5;
  CalibratedCostModel half(load_hardware("h100-sxm", kProfileNone), p, testing::unit_factors());
  auto gemv = [](int64_t k) {
    return make_gemm_op("g", 1, 4096, k, DType::bf16, DType::bf16, DType::bf16, DType::bf16);
  };
  EXPECT_DOUBLE_EQ(half.price(gemv(4000)).time_s, full.price(gemv(4000)).time_s);
  GemmWavePlan plan = full.plan_gemm(gemv(4004));
  ASSERT_GT(plan.compute_s, 2.0 * plan.memory_s);
  EXPECT_NEAR(half.price(gemv(4004)).time_s, 2.0 * full.price(gemv(4004)).time_s, 1e-12);
}

// Rows of k bf16 elements: 4096 x 2 B = 8192 B starts every row on a 128-byte line; 4128
// (8256 B, 64 past a multiple of 128) puts every other row 64 bytes in; 4112 (8224 B) puts
// rows on sectors 32 and 96 bytes in too; 4100 and 4104 (8200, 8208 B) put rows off sectors.
TEST(Calibrated, RowAlignmentShareFollowsTheLineOffset) {
  CalibratedParams p = plain_params();
  p[P::gemm_offset64_efficiency] = 0.9;
  p[P::gemm_offset32_efficiency] = 0.7;
  p[P::gemm_unaligned_efficiency] = 0.5;
  CalibratedCostModel model(load_hardware("h100-sxm", kProfileNone), p, testing::unit_factors());
  EXPECT_DOUBLE_EQ(model.row_alignment_share(4096 * 2.0), 1.0);
  EXPECT_DOUBLE_EQ(model.row_alignment_share(4128 * 2.0), 0.9);
  EXPECT_DOUBLE_EQ(model.row_alignment_share(4112 * 2.0), 0.7);
  EXPECT_DOUBLE_EQ(model.row_alignment_share(4100 * 2.0), 0.5);
  EXPECT_DOUBLE_EQ(model.row_alignment_share(4104 * 2.0), 0.5);
  EXPECT_DOUBLE_EQ(model.row_alignment_share(1000 * 4.0), 0.7);  // fp32 rows of 4000 B
}

// With L2 feeding all SMs at 1 TB/s, 4096^3 is bound by it, not by the MMAs: a 128x256 tile
// alone needs (256 / 2 + 128) x 2 B = 512 B of operands per k (its cluster twin loads the
// other half of the shared block), 2.1 MB over k = 4096, and 132 of them at once take
// 277 us a wave against 36 us of FLOPs. Whatever tiling wins, each wave takes its CTAs' L2
// bytes over the feed (a last, partial wave priced as a full one, as its CTAs run as long);
// halving the feed (or the unaligned share, on rows off sectors) doubles the time.
TEST(Calibrated, ManyCtasShareTheL2Feed) {
  CalibratedParams p = plain_params();
  p[P::gemm_operand_latency_s] = 1e-9;   // per-CTA streams out of the way
  p[P::gemm_streamk_efficiency] = 0.05;  // and stream-K
  p[P::gemm_l2_feed_bps] = 1e12;
  CalibratedCostModel fed(load_hardware("h100-sxm", kProfileNone), p, testing::unit_factors());
  auto gemm = [](int64_t k) {
    return make_gemm_op("g", 4096, 4096, k, DType::bf16, DType::bf16, DType::bf16, DType::bf16);
  };
  GemmWavePlan plan = fed.plan_gemm(gemm(4096));
  const double tm = static_cast<double>(plan.tile_m), tn = static_cast<double>(plan.tile_n);
  const double cta_bytes = (std::max(tm, tn) / 2.0 + std::min(tm, tn)) * 2.0 * 4096.0;
  const double ctas_at_once = std::min(static_cast<double>(plan.ctas), 132.0);
  EXPECT_EQ(plan.split_k, 1);
  EXPECT_FALSE(plan.stream_k);
  EXPECT_NEAR(plan.time_s, static_cast<double>(plan.waves) * cta_bytes * ctas_at_once / 1e12,
              1e-12);
  EXPECT_GT(plan.time_s, 5.0 * 2.0 * 4096.0 * 4096.0 * 4096.0 / 989.4e12);
  p[P::gemm_l2_feed_bps] = 0.5e12;
  CalibratedCostModel half(load_hardware("h100-sxm", kProfileNone), p, testing::unit_factors());
  EXPECT_NEAR(half.price(gemm(4096)).time_s, 2.0 * plan.time_s, 1e-12);
  p[P::gemm_l2_feed_bps] = 1e12;
  p[P::gemm_unaligned_efficiency] = 0.5;
  CalibratedCostModel off(load_hardware("h100-sxm", kProfileNone), p, testing::unit_factors());
  EXPECT_NEAR(off.price(gemm(4104)).time_s, 2.0 * fed.price(gemm(4104)).time_s, 1e-12);
}

// Decode attention of 8 sequences x 8 KV heads x 4096 tokens x 128 dims: K and V are
// 2 x 8 x 4096 x 8 x 128 x 2 B = 134.2 MB, streamed at 3.35 TB/s x 0.5 = 80.1 us.
TEST(Calibrated, DecodeAttentionStreamsTheKvCache) {
  CalibratedParams p = plain_params();
  p[P::attn_decode_efficiency] = 0.5;
  CalibratedCostModel model(load_hardware("h100-sxm", kProfileNone), p, testing::unit_factors());
  Op op = make_attention_op("a", {8, 32, 8, 128, 1, 4096, false}, DType::bf16, DType::bf16);
  EXPECT_NEAR(op.kv_bytes, 134'217'728.0, 0.5);
  OpCost c = model.price(op);
  EXPECT_NEAR(c.time_s, op.bytes() / (3.35e12 * 0.5), 1e-12);
}

// PyTorch's norm kernel walks a row of 4096 with 128 threads x 4 elements: 8 round trips a
// pass, 2 passes, 16 x 0.4 us = 6.4 us, far above the bandwidth term (24,576 B at 3.35 TB/s,
// 7 ns). vLLM's fused add+RMSNorm walks it with 1024 threads: 4 round trips a pass, 3.2 us.
// 2048 threads per SM hold 16 PyTorch rows (2112 on 132 SMs) or 2 fused ones (264): with 2 us
// round trips (32 us a PyTorch row, 16 us a fused one, both above the bandwidth term of
// 2113 rows, 10.3 us), 2112 rows are one wave and 2113 two; 265 fused rows are two waves.
TEST(Calibrated, FewRowsAreBoundByTheirCtasRoundTrips) {
  CalibratedParams p = plain_params();
  p[P::norm_round_trip_s] = 0.4e-6;
  CalibratedCostModel model(load_hardware("h100-sxm", kProfileNone), p, testing::unit_factors());
  EXPECT_NEAR(model.price(make_rmsnorm_op("n", 1, 4096, DType::bf16)).time_s, 6.4e-6, 1e-12);
  EXPECT_NEAR(model.price(make_add_rmsnorm_op("n", 1, 4096, DType::bf16)).time_s, 3.2e-6, 1e-12);
  p[P::norm_round_trip_s] = 2e-6;
  CalibratedCostModel slow(load_hardware("h100-sxm", kProfileNone), p, testing::unit_factors());
  EXPECT_NEAR(slow.price(make_rmsnorm_op("n", 2112, 4096, DType::bf16)).time_s, 32e-6, 1e-12);
  EXPECT_NEAR(slow.price(make_rmsnorm_op("n", 2113, 4096, DType::bf16)).time_s, 64e-6, 1e-12);
  EXPECT_NEAR(slow.price(make_add_rmsnorm_op("n", 264, 4096, DType::bf16)).time_s, 16e-6, 1e-12);
  EXPECT_NEAR(slow.price(make_add_rmsnorm_op("n", 265, 4096, DType::bf16)).time_s, 32e-6, 1e-12);
}

// 32768 rows of 4096, 16 per SM: 16 waves of 6.4 us = 102.4 us, under the bandwidth term
// 32768 x 4096 x 4 B + 8192 B = 536.9 MB at 3.35 TB/s = 160.3 us, which is the price.
TEST(Calibrated, ManyRowsAreBoundByBandwidth) {
  CalibratedParams p = plain_params();
  p[P::norm_round_trip_s] = 0.4e-6;
  CalibratedCostModel model(load_hardware("h100-sxm", kProfileNone), p, testing::unit_factors());
  const double bytes = 32768.0 * 4096.0 * 4.0 + 8192.0;
  EXPECT_NEAR(model.price(make_rmsnorm_op("n", 32768, 4096, DType::bf16)).time_s, bytes / 3.35e12,
              1e-12);
}

// Unfused RoPE (PyTorch on transposed views) streams at its own efficiency; timed alone its
// further kernels wait for their launches at the RoPE launch wait.
TEST(Calibrated, RopeStreamsAtItsOwnEfficiency) {
  CalibratedParams p = plain_params();
  p[P::rope_efficiency] = 0.5;
  p[P::rope_isolated_launch_s] = 2e-6;
  p[P::elementwise_fixed_s] = 1e-6;
  HardwareSpec hw = load_hardware("h100-sxm", kProfileNone);
  CalibratedCostModel model(hw, p, testing::unit_factors());
  // Llama 3 8B, 4096 tokens: q 4096 x 4096, k 4096 x 1024, bf16; 5 kernels per tensor each
  // reading and writing it: 10 x (33.55 + 8.39) MB = 419.4 MB.
  Op rope = make_rope_op("rope", 4096, 4096, 1024, 5, DType::bf16);
  EXPECT_EQ(rope.kernels, 10);
  EXPECT_DOUBLE_EQ(rope.bytes(), 10.0 * 2.0 * 4096.0 * (4096.0 + 1024.0));
  const double in_stream = rope.bytes() / (0.5 * 3.35e12) + 10 * 1e-6;
  EXPECT_NEAR(model.price(rope).time_s, in_stream, 1e-12);
  EXPECT_NEAR(model.isolated_time_s(rope), in_stream + 9 * 2e-6, 1e-12);
}

// SiLU x mul on the halves of a fused gate/up output: the same bytes as on contiguous tensors,
// at the strided share of bandwidth and the strided fixed cost per kernel.
TEST(Calibrated, StridedElementwiseStreamsAtItsOwnEfficiency) {
  CalibratedParams p = plain_params();
  p[P::elementwise_efficiency] = 1.0;
  p[P::elementwise_fixed_s] = 1e-6;
  p[P::strided_efficiency] = 0.6;
  p[P::strided_fixed_s] = 3e-6;
  CalibratedCostModel model(load_hardware("h100-sxm", kProfileNone), p, testing::unit_factors());
  Op contiguous = make_silu_mul_op("silu_mul", 4096, 14336, DType::bf16);
  Op strided = contiguous;
  strided.strided_input = true;
  EXPECT_NEAR(model.price(contiguous).time_s, contiguous.bytes() / 3.35e12 + 1e-6, 1e-12);
  EXPECT_NEAR(model.price(strided).time_s, strided.bytes() / (0.6 * 3.35e12) + 3e-6, 1e-12);
}

// Timed alone: + event overhead, + the dirty L2 the op evicts (min(bytes, 50 MB L2)), + the
// launch wait of each further kernel.
TEST(Calibrated, IsolatedTimeAddsTheMeasurementOverheads) {
  CalibratedParams p = plain_params();
  p[P::isolated_event_s] = 3e-6;
  p[P::isolated_flush_fraction] = 0.5;
  p[P::isolated_launch_s] = 1e-6;
  HardwareSpec hw = load_hardware("h100-sxm", kProfileNone);
  CalibratedCostModel model(hw, p, testing::unit_factors());
  Op op = make_silu_mul_op("s", 32768, 14336, DType::bf16);
  op.kernels = 2;
  double expected = model.price(op).time_s + 3e-6 + 1e-6 + 0.5 * hw.l2_bytes / 3.35e12;
  EXPECT_NEAR(model.isolated_time_s(op), expected, 1e-12);
}

// The H100's measured profile reaches 3.14 of 3.35 TB/s; an H200 without a profile gets its
// 4.8 TB/s sheet figure times that ratio. Per-CTA rates scale with the clock (1.98 / 1.98).
TEST(Calibrated, TransferScalesTheSheetByTheSourceRatios) {
  HardwareSpec h100 = load_hardware("h100-sxm", kProfileAuto);
  ASSERT_TRUE(h100.profile.has_value());
  HardwareSpec h200 = load_hardware("h200", kProfileNone);
  CalibratedParams p = plain_params();
  p.hardware = "h100-sxm";
  CalibratedParams moved = transfer_calibration(p, h100, h200);
  EXPECT_NEAR(h200.memory_bandwidth_bps,
              4.8e12 * h100.memory_bandwidth_bps / h100.datasheet_memory_bandwidth_bps, 1.0);
  EXPECT_NEAR(*h200.peak_flops(DType::bf16),
              989.4e12 * *h100.peak_flops(DType::bf16) /
                  *h100.datasheet_peak_flops_per_s[static_cast<int>(DType::bf16)],
              1e3);
  EXPECT_NEAR(moved[P::gemm_operand_latency_s],
              p[P::gemm_operand_latency_s] * h100.boost_clock_hz / h200.boost_clock_hz, 1e-15);
  EXPECT_NEAR(moved[P::gemm_l2_feed_bps],
              p[P::gemm_l2_feed_bps] * h200.boost_clock_hz / h100.boost_clock_hz, 1.0);
}

// The cuBLAS tile catalogue is a measurement shipped as data (data/calibrated/gemm_tiles/).
TEST(Calibrated, TileCatalogueIsReadFromData) {
  const GemmTileCatalogue& tiles = cublas_gemm_tiles();
  ASSERT_EQ(tiles.size(), 42u);
  EXPECT_EQ(tiles.front(), std::make_pair(int64_t{8}, int64_t{64}));
  EXPECT_EQ(tiles.back(), std::make_pair(int64_t{256}, int64_t{160}));
  EXPECT_EQ(&tiles, &cublas_gemm_tiles());  // read once
  auto path = std::filesystem::temp_directory_path() / "inferlab_bad_tiles.json";
  std::ofstream(path) << R"({"source": "test", "tiles": [[8, 0]]})";
  EXPECT_THROW(load_gemm_tile_catalogue(path), InputError);
  std::ofstream(path) << R"({"source": "test"})";
  EXPECT_THROW(load_gemm_tile_catalogue(path), InputError);
  std::filesystem::remove(path);
}

TEST(Calibrated, BadCalibrationFilesAreInputErrors) {
  nlohmann::json j = calibrated_params_to_json(initial_calibrated_params());
  j["hardware"] = "h100-sxm";
  EXPECT_NO_THROW(calibrated_params_from_json(j, "test"));
  j["params"]["gemm_compute_efficiency"] = -1.0;
  EXPECT_THROW(calibrated_params_from_json(j, "test"), InputError);
  j["params"].erase("gemm_compute_efficiency");
  EXPECT_THROW(calibrated_params_from_json(j, "test"), InputError);
  EXPECT_THROW(load_cost({"h100-sxm", kProfileAuto, parse_cost_method("magic")}), InputError);
  EXPECT_THROW(load_cost({"mi210", kProfileAuto, CostMethod::calibrated}),
               InputError);  // no CDNA2 calibration
}

}  // namespace
}  // namespace inferlab
