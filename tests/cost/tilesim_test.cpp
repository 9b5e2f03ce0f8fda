#include <gtest/gtest.h>

#include "cost/tilesim/tilesim_cost.hpp"
#include "hw/hardware_template.hpp"
#include "model/model_config.hpp"
#include "model/op_builders.hpp"
#include "model/step_graph.hpp"
#include "util/error.hpp"

namespace inferlab {
namespace {

// A template small enough to work out by hand: one core with one 4x4 tensor unit at 1 GHz,
// everything else so fast it never bounds.
nlohmann::json toy_template() {
  return {{"name", "toy"},
          {"display_name", "toy"},
          {"process_node", "N7"},
          {"clock_hz", 1e9},
          {"core_count", 1},
          {"core",
           {{"tensor_units_per_core", 1},
            {"tensor_rows", 4},
            {"tensor_cols", 4},
            {"tensor_dtype_rate", {{"bf16", 1}}},
            {"vector_lanes", 4},
            {"vector_flops_per_lane_cycle", 2},
            {"sfu_ops_per_cycle", 1},
            {"register_file_bytes", 1e9},
            {"local_buffer_bytes", 1e9},
            {"local_buffer_bytes_per_cycle", 1e6}}},
          {"global_buffer", {{"bytes", 1e9}, {"bandwidth_bps", 1e15}}},
          {"memory",
           {{"type", "HBM3"}, {"capacity_bytes", 1e10}, {"bandwidth_bps", 1e15}, {"channels", 1}}},
          {"node",
           {{"devices", 4},
            {"link_bandwidth_bps", 25e9},
            {"links_per_device", 12},
            {"link_latency_s", 1e-6},
            {"topology", "switch"},
            {"link_kind", "test"}}},
          {"efficiency",
           {{"tensor", 1.0},
            {"memory", 1.0},
            {"global_buffer", 1.0},
            {"kernel_in_stream_s", 1e-9},
            {"kernel_isolated_s", 2e-9}}}};
}

TEST(HardwareTemplate, ShippedPeaksMatchTheirDatasheets) {
  // 132 SMs x 4 tensor cores x 512 MACs x 2 x 1.83 GHz; datasheet 989.4 TFLOP/s.
  HardwareTemplate h100 = load_hardware_template("h100-sxm");
  EXPECT_NEAR(h100.matrix_peak_flops(DType::bf16) / 989.4e12, 1.0, 1e-3);
  EXPECT_NEAR(h100.matrix_peak_flops(DType::fp8) / 1978.9e12, 1.0, 1e-3);
  // 108 x 4 x 256 x 2 x 1.41 GHz = 311.9; datasheet 312.
  HardwareTemplate a100 = load_hardware_template("a100-80g");
  EXPECT_NEAR(a100.matrix_peak_flops(DType::bf16) / 312e12, 1.0, 1e-3);
  EXPECT_EQ(a100.core.tensor.macs_per_cycle(DType::fp8), 0.0);
  // 2 cores x 2 MXUs x 128 x 128 x 2 x 0.94 GHz = 123.2 TFLOP/s.
  HardwareTemplate tpu = load_hardware_template("tpuv3");
  EXPECT_NEAR(tpu.matrix_peak_flops(DType::bf16) / 123.2e12, 1.0, 1e-3);
}

TEST(HardwareTemplate, VariantsInheritTheirBase) {
  HardwareTemplate ddr5 = load_hardware_template("h100-sxm-ddr5");
  EXPECT_EQ(ddr5.core_count, 132);
  EXPECT_EQ(ddr5.memory.type, MemoryType::ddr5);
  EXPECT_DOUBLE_EQ(ddr5.memory.bandwidth_bps, 16 * 51.2e9);
  EXPECT_EQ(ddr5.published_die_area_mm2, 0.0);  // not the published die any more
  HardwareTemplate half = load_hardware_template("h100-sxm-half-cores");
  EXPECT_EQ(half.core_count, 66);
  EXPECT_DOUBLE_EQ(half.memory.bandwidth_bps, 3.35e12);
  HardwareTemplate varied = vary_template(load_hardware_template("h100-sxm"), "cores", 264, "264");
  EXPECT_EQ(varied.core_count, 264);
  EXPECT_EQ(varied.physical_core_count, 288);  // spares scale: 144 / 132 x 264
}

TEST(HardwareTemplate, BadInputIsAnInputError) {
  EXPECT_THROW(load_hardware_template("no-such-chip"), InputError);
  EXPECT_THROW(load_hardware_template("/nonexistent/t.json"), InputError);
  auto bad = toy_template();
  bad["clock_hz"] = -1.0;
  EXPECT_THROW(parse_hardware_template(bad, "t"), InputError);
  bad = toy_template();
  bad["memory"]["type"] = "HBM9";
  EXPECT_THROW(parse_hardware_template(bad, "t"), InputError);
  bad = toy_template();
  bad["efficiency"]["tensor"] = 7.0;
  EXPECT_THROW(parse_hardware_template(bad, "t"), InputError);
  bad = toy_template();
  bad.erase("node");
  EXPECT_THROW(parse_hardware_template(bad, "t"), InputError);
  bad = toy_template();
  bad["efficiency"]["sustained_compute_slowdown"] = 0.5;  // a faster clock under load
  EXPECT_THROW(parse_hardware_template(bad, "t"), InputError);
  bad = toy_template();
  bad["global_buffer"]["physical_bytes"] = 1.0;  // less on the die than enabled
  EXPECT_THROW(parse_hardware_template(bad, "t"), InputError);
  bad = toy_template();
  bad["core"]["fp64_lanes"] = -4;
  EXPECT_THROW(parse_hardware_template(bad, "t"), InputError);
  bad = toy_template();
  bad["core"]["fp32_int32_lanes"] = 8;  // more shared int32 lanes than fp32 lanes (4)
  EXPECT_THROW(parse_hardware_template(bad, "t"), InputError);
  bad = toy_template();
  bad["core"]["rt_cores"] = -1;
  EXPECT_THROW(parse_hardware_template(bad, "t"), InputError);
  bad = toy_template();
  bad["efficiency"]["kernel_floor_s"] = {{"warp_shuffle", 1e-6}};  // no such kernel kind
  EXPECT_THROW(parse_hardware_template(bad, "t"), InputError);
  bad = toy_template();
  bad["efficiency"]["kernel_floor_s"] = {{"gemm", -1e-6}};
  EXPECT_THROW(parse_hardware_template(bad, "t"), InputError);
  bad = toy_template();
  bad["efficiency"]["memory_ramp_s"] = -1e-6;
  EXPECT_THROW(parse_hardware_template(bad, "t"), InputError);
  bad = toy_template();
  bad["efficiency"]["noncontiguous_memory"] = 3.0;
  EXPECT_THROW(parse_hardware_template(bad, "t"), InputError);
  auto toy = parse_hardware_template(toy_template(), "t");
  EXPECT_THROW(vary_template(toy, "warp_size", 64, "64"), InputError);
  EXPECT_THROW(vary_template(toy, "cores", -2, "-2"), InputError);
}

TEST(GemmMapper, OneTileWorkedByHand) {
  HardwareTemplate toy = parse_hardware_template(toy_template(), "toy");
  GemmMapper mapper(toy, 1);
  GemmProblem p;
  p.m = 16, p.n = 16, p.k = 1024;
  GemmMapping c;
  c.tile_m = 16, c.tile_n = 16, c.tile_k = 32, c.raster_m = 1, c.raster_n = 1;
  GemmMapping m = mapper.evaluate(p, c);
  // 4 x 4 blocks of the 4x4 array, one unit: 16 rounds of (1024 + 4 + 4) cycles at 1 GHz.
  EXPECT_EQ(m.waves, 1);
  EXPECT_DOUBLE_EQ(m.compute_s, 16.0 * 1032.0 / 1e9);
  EXPECT_DOUBLE_EQ(m.tensor_occupancy, 16.0 * 16.0 * 1024.0 / (16.0 * 1032.0 * 16.0));
  EXPECT_EQ(m.bound, "compute");
  // A tile whose accumulators cannot fit is refused.
  HardwareTemplate small = toy;
  small.core.register_file_bytes = 1024;
  GemmMapper small_mapper(small, 1);
  EXPECT_TRUE(std::isinf(small_mapper.evaluate(p, c).time_s));
}

TEST(GemmMapper, SameWinnerOnAnyThreadCount) {
  HardwareTemplate h100 = load_hardware_template("h100-sxm");
  GemmProblem p;
  p.m = 777, p.n = 5000, p.k = 3000;
  GemmMapping one = GemmMapper(h100, 1).map(p);
  GemmMapping four = GemmMapper(h100, 4).map(p);
  EXPECT_EQ(one.describe(), four.describe());
  EXPECT_EQ(one.time_s, four.time_s);
}

TEST(TileSim, LargeGemmNearTheMeasuredH100) {
  // cuBLASLt bf16 8192^3 on the H100, probe profile 2026-11-22: 1.346 ms median.
  TileSimCostModel cost(load_hardware_template("h100-sxm"));
  Op op = make_gemm_op("g", 8192, 8192, 8192, DType::bf16, DType::bf16, DType::bf16, DType::bf16,
                       false, 128);
  EXPECT_NEAR(cost.isolated_time_s(op) / 1.346e-3, 1.0, 0.10);
  // Big tiles win for a big GEMM.
  GemmProblem p;
  p.m = p.n = p.k = 8192;
  GemmMapping m = cost.mapper().map(p);
  EXPECT_GE(m.tile_m * m.tile_n, 128 * 128);
}

TEST(TileSim, SustainedSlowdownComesFromTheTemplate) {
  // The H100 template carries the measured power-cap slowdown (347.0 / 305.0 us); a template
  // without one has none.
  TileSimCostModel h100(load_hardware_template("h100-sxm"), 1);
  EXPECT_NEAR(h100.sustained_compute_slowdown(), 347.0 / 305.0, 1e-3);
  TileSimCostModel toy(parse_hardware_template(toy_template(), "t"), 1);
  EXPECT_DOUBLE_EQ(toy.sustained_compute_slowdown(), 1.0);
}

// The library kernels' measured floors and the memory ramp, worked by hand on the toy template.
nlohmann::json toy_with_floors() {
  auto t = toy_template();
  t["efficiency"]["kernel_floor_s"] = {
      {"gemm", 3e-6}, {"norm", 2e-6}, {"elementwise", 1e-6}, {"noncontiguous_elementwise", 1.5e-6}};
  t["efficiency"]["memory_ramp_s"] = 2e-6;
  t["efficiency"]["noncontiguous_memory"] = 0.25;
  t["memory"]["latency_s"] = 400e-9;
  t["core"]["vector_lanes"] = 65536;  // 131 TFLOP/s: RoPE's arithmetic never bounds
  return t;
}

TEST(TileSim, KernelFloorsAndRampWorkedByHand) {
  HardwareTemplate toy = parse_hardware_template(toy_with_floors(), "toy");
  EXPECT_DOUBLE_EQ(toy.efficiency.kernel_floor(KernelKind::gemm), 3e-6);
  // Not measured: the generic in-stream kernel cost stands in.
  EXPECT_DOUBLE_EQ(toy.efficiency.kernel_floor(KernelKind::attention_decode), 1e-9);
  TileSimCostModel cost(toy, 1);
  // A GEMM's fixed part: its floor plus the ramp of streaming its weights.
  GemmProblem p;
  p.m = 16, p.n = 16, p.k = 1024;
  EXPECT_DOUBLE_EQ(cost.mapper().map(p).fixed_s, 5e-6);
  // RoPE: 10 kernels at the non-contiguous floor, bytes at a quarter of 1 PB/s.
  Op rope = make_rope_op("rope", 4096, 4096, 1024, 5, DType::bf16);
  TileSimBreakdown r = cost.simulate(rope);
  EXPECT_NEAR(r.time_s, rope.bytes() / 0.25e15 + 10 * 1.5e-6, 1e-15);
  // One RMSNorm row of 4096 bf16 = 8 KB, moved 2 KB (128 threads x 16 B) per round trip in two
  // passes: 8 round trips, the first chunk's 2 already in the floor: 6 x 400 ns + 2 us.
  TileSimBreakdown n = cost.simulate(make_rmsnorm_op("n", 1, 4096, DType::bf16));
  EXPECT_NEAR(n.local_s, 6 * 400e-9, 1e-15);
  EXPECT_NEAR(n.time_s, 6 * 400e-9 + 2e-6, 1e-12);
}

TEST(TileSim, RingAllReduceWorkedByHand) {
  TileSimCostModel cost(parse_hardware_template(toy_template(), "toy"));
  Op op = make_all_reduce_op("ar", 1e9, 4);
  // Switch: 12 links x 25 GB/s; ring 2 x 3/4 x 1 GB / 300 GB/s + 6 x 1 us beats the tree.
  TileSimBreakdown b = cost.simulate(op);
  EXPECT_EQ(b.mapping, "ring");
  EXPECT_NEAR(b.communication_s, 2.0 * 0.75 * 1e9 / 300e9 + 6e-6, 1e-12);
}

TEST(Gpt3, ParametersAndOperators) {
  ModelConfig m = load_model("gpt3-175b");
  EXPECT_TRUE(m.gpt_style);
  EXPECT_EQ(m.intermediate_size, 4 * 12288);
  // 96 x (4h^2 + 8h^2 + biases + 2 LayerNorms) + (50257 + 2048) x h + final norm.
  EXPECT_EQ(m.total_params(), 174604247040);
  std::vector<Op> ops;
  build_step_graph(m, {Phase::decode, 1, 1, 100}, Precision{}, KernelPlan{}, shard_dims(m, 8), ops);
  int layernorms = 0, gelus = 0, ropes = 0;
  for (const auto& op : ops) {
    layernorms += op.kind == OpKind::layernorm || op.kind == OpKind::add_layernorm;
    gelus += op.kind == OpKind::gelu;
    ropes += op.kind == OpKind::rope || op.kind == OpKind::rope_kv_write;
  }
  EXPECT_EQ(layernorms, 3);  // input, post-attention, next-layer (per-layer ops counted once)
  EXPECT_EQ(gelus, 1);
  EXPECT_EQ(ropes, 0);
}

}  // namespace
}  // namespace inferlab
