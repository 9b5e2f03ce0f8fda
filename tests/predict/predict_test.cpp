#include <gtest/gtest.h>

#include "cost/roofline.hpp"
#include "model/op_builders.hpp"
#include "predict/request_predictor.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

namespace inferlab {
namespace {

struct Fixture {
  ModelConfig model;
  HardwareSpec hw;
  RooflineCostModel cost;
  HostOverhead host;
  Fixture(const std::string& m, const std::string& h)
      : model(load_model(m)),
        hw(load_hardware(h)),
        cost(hw, load_delay_factors(hw)),
        host(load_host_overhead()) {}
  RequestPrediction run(const PredictOptions& o) {
    return predict_request(model, hw, cost, o, host);
  }
};

TEST(LaunchQueue, HostBoundAndGpuBound) {
  PricedOp op;
  op.op.scope = Scope::per_layer;
  op.op.count = 3;
  op.cost.time_s = 5e-6;
  // Host issues every 10 us, kernels take 5 us: last ends at 30 + 5 = 35 us.
  EXPECT_NEAR(replay_launch_queue({op}, 3, 10e-6), 35e-6, 1e-12);
  // Host issues every 1 us: the GPU is the bottleneck, 1 + 3 x 5 = 16 us.
  EXPECT_NEAR(replay_launch_queue({op}, 3, 1e-6), 16e-6, 1e-12);
}

TEST(Predict, DecodeOf8BAtBatch1IsMemoryBound) {
  Fixture f("llama-3-8b", "h100-sxm");
  PredictOptions o;
  RequestPrediction r = f.run(o);
  double memory_bound_s = 0.0;
  for (const auto& p : r.first_decode.ops) {
    if (p.cost.bound == Bound::memory) memory_bound_s += p.total_s();
  }
  EXPECT_GT(memory_bound_s / r.first_decode.gpu_s, 0.9);
  // Streaming 15 GB at 3.35 TB/s takes 4.5 ms: the step cannot be faster.
  EXPECT_GT(r.tpot_s, 15.0e9 / 3.35e12);
}

TEST(Predict, DecodeStepsSumAtTheirOwnContexts) {
  Fixture f("llama-3.2-1b", "h100-sxm");
  PredictOptions o;
  o.input_tokens = 1000;
  o.output_tokens = 3;
  o.batch = 8;
  RequestPrediction r = f.run(o);
  StepContext c = make_step_context(f.model, f.hw, f.cost, o, f.host);
  double step1 = predict_step(c, {Phase::decode, 8, 1, 1001}).time_s;
  double step2 = predict_step(c, {Phase::decode, 8, 1, 1002}).time_s;
  EXPECT_EQ(r.decode_steps, 2);
  EXPECT_NEAR(r.decode_total_s, step1 + step2, 1e-12);
  EXPECT_NEAR(r.tpot_s, (step1 + step2) / 2, 1e-12);
  EXPECT_NEAR(r.e2e_s, r.ttft_s + r.decode_total_s, 1e-12);
  EXPECT_NEAR(r.decode_tokens_per_s, 8 * 2 / r.decode_total_s, 1e-6);
  EXPECT_GT(step2, step1);  // one more cached token to read
}

TEST(Predict, EagerPathMatchesStepByStepToo) {
  Fixture f("llama-3.2-1b", "h100-sxm");
  PredictOptions o;
  o.cuda_graphs = false;
  o.framework = Framework::pytorch;
  o.output_tokens = 4;
  RequestPrediction eager = f.run(o);
  o.cuda_graphs = true;
  RequestPrediction graphs = f.run(o);
  // 1B at batch 1 launches ~26 kernels a layer, each ~10 us of host time: host bound.
  EXPECT_GT(eager.tpot_s, 1.5 * graphs.tpot_s);
  EXPECT_GE(eager.first_decode.time_s, eager.first_decode.kernels * f.host.eager_per_kernel_s);
}

// The step tells the cost model how its ops are launched: the inferlab engine's prefill (eager)
// and its graphed decode price their collectives from different curves (EngineCostModel).
TEST(Predict, OpsCarryTheStepsLaunchMode) {
  Fixture f("llama-3-8b", "h200");
  PredictOptions o;
  o.tp = 2;
  StepContext c = make_step_context(f.model, f.hw, f.cost, o, f.host);
  for (const bool graphs : {false, true}) {
    c.cuda_graphs = graphs;
    const StepPrediction step = predict_step(c, {Phase::prefill, 1, 256, 256});
    int collectives = 0;
    for (const auto& p : step.ops) {
      EXPECT_EQ(p.op.eager_launch, !graphs) << p.op.name;
      collectives += p.op.kind == OpKind::all_reduce;
    }
    EXPECT_GT(collectives, 0);
  }
}

TEST(Predict, Llama70BNeedsFourH100sInBf16) {
  Fixture f("llama-3-70b", "h100-sxm");
  PredictOptions o;
  RequestPrediction one = f.run(o);
  EXPECT_FALSE(one.memory.fits);
  EXPECT_GT(one.memory.weights_bytes, 140e9);
  o.tp = 4;
  RequestPrediction four = f.run(o);
  EXPECT_TRUE(four.memory.fits);
  EXPECT_NEAR(four.memory.weights_bytes, one.memory.weights_bytes / 4, 0.01e9);
  EXPECT_LT(four.tpot_s, one.tpot_s);
}

TEST(Predict, QuantizationShrinksDecode) {
  Fixture f("llama-3-8b", "h100-sxm");
  PredictOptions o;
  double bf16 = f.run(o).tpot_s;
  o.weights = DType::int4;
  double int4 = f.run(o).tpot_s;
  EXPECT_LT(int4, 0.5 * bf16);  // 4x fewer weight bytes, LM head and overheads stay
  o.weights = DType::fp8;
  o.activations = DType::fp8;
  o.kv = DType::fp8;
  RequestPrediction w8a8 = f.run(o);
  EXPECT_LT(w8a8.tpot_s, bf16);
  EXPECT_NEAR(w8a8.memory.kv_cache_bytes, 640 * 65536.0, 1.0);
}

TEST(Predict, PrecisionRules) {
  HardwareSpec a100 = load_hardware("a100-80g");
  HardwareSpec t4 = load_hardware("t4");
  PredictOptions o;
  EXPECT_EQ(resolve_precision(o, t4).float_dtype, DType::fp16);  // no bf16 on Turing
  o.weights = DType::fp8;
  o.activations = DType::fp8;
  EXPECT_THROW(resolve_precision(o, a100), InputError);  // no fp8 matrix units
  o.weights = DType::int4;
  o.activations = DType::int8;
  EXPECT_THROW(resolve_precision(o, a100), InputError);  // W8A8 needs int8 weights
  o.weights = DType::int8;
  EXPECT_EQ(resolve_precision(o, a100).gemm_compute, DType::int8);
  o = PredictOptions{};
  o.weights = DType::bf16;
  EXPECT_THROW(resolve_precision(o, t4), InputError);
  o = PredictOptions{};
  o.kv = DType::int4;
  EXPECT_THROW(resolve_precision(o, a100), InputError);
}

TEST(Predict, SizeValidation) {
  PredictOptions o;
  o.batch = 0;
  EXPECT_THROW(validate_sizes(o), InputError);
  o.batch = -3;
  EXPECT_THROW(validate_sizes(o), InputError);
  o = PredictOptions{};
  o.batch = 1 << 20;
  o.input_tokens = 1 << 24;
  EXPECT_THROW(validate_sizes(o), InputError);
  o = PredictOptions{};
  o.gpu_memory_utilization = 1.5;
  EXPECT_THROW(validate_sizes(o), InputError);
}

TEST(Predict, FlashAttentionOffCostsMoreAtLongPrompts) {
  Fixture f("llama-3-8b", "h100-sxm");
  PredictOptions o;
  o.input_tokens = 4096;
  o.output_tokens = 2;
  RequestPrediction flash = f.run(o);
  o.flash_attention = false;
  RequestPrediction plain = f.run(o);
  EXPECT_GT(plain.prefill_s, flash.prefill_s);
  EXPECT_GT(plain.memory.activations_bytes, flash.memory.activations_bytes + 2e9);
}

TEST(SustainedClock, StepScalesComputeBoundTimeByItsShare) {
  // 3 ms compute bound + 1 ms memory bound: share 0.75, slowdown 1.2 -> factor 1.15.
  StepPrediction step;
  PricedOp gemm_op;
  gemm_op.op.count = 1;
  gemm_op.cost.compute_s = 3e-3;
  gemm_op.cost.combine_parts();
  PricedOp norm_op;
  norm_op.op.count = 1;
  norm_op.cost.memory_s = 1e-3;
  norm_op.cost.combine_parts();
  step.ops = {gemm_op, norm_op};
  step.gpu_s = 4e-3;
  apply_sustained_slowdown(1.2, step);
  EXPECT_NEAR(step.ops[0].cost.time_s, 3e-3 * 1.15, 1e-15);
  EXPECT_DOUBLE_EQ(step.ops[1].cost.time_s, 1e-3);
  EXPECT_NEAR(step.gpu_s, 3e-3 * 1.15 + 1e-3, 1e-15);
  apply_sustained_slowdown(1.0, step);  // no slowdown: unchanged
  EXPECT_NEAR(step.gpu_s, 3e-3 * 1.15 + 1e-3, 1e-15);
}

}  // namespace
}  // namespace inferlab
