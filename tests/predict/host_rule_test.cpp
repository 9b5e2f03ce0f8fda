// The host rule (predict/framework.hpp): host costs derived from a host measurement, values
// worked out by hand.
#include <gtest/gtest.h>

#include "cost/roofline.hpp"
#include "predict/step_predictor.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

namespace inferlab {
namespace {

HostOverhead rule(double layer_dispatches, double base_dispatches, double per_cpu = 0.0) {
  HostOverhead h;
  h.eager_per_kernel_s = 9.73e-6;  // today's constants, which a derivation replaces
  h.pytorch_layer_s = 0.5595e-3;
  h.pytorch_step_base_s = 0.3075e-3;
  h.pytorch_layer_dispatches = layer_dispatches;
  h.pytorch_step_base_dispatches = base_dispatches;
  h.dispatch_per_cpu_dispatch = per_cpu;
  return h;
}

HostProfile host(double launch_us, double torch_op_us, double cpu_ns = 0.0, double graph_us = 0.0) {
  HostProfile h;
  h.path = "host.json";
  h.launch_s = launch_us * 1e-6;
  h.torch_op_s = torch_op_us * 1e-6;
  h.cpu_dispatch_s = cpu_ns * 1e-9;
  h.graph_launch_s = graph_us * 1e-6;
  return h;
}

// dispatch = PyTorch op - launch = 10 - 4 = 6 us; an op per kernel elsewhere: 6 + 4 = 10 us.
TEST(HostRule, DispatchIsThePyTorchOpLessItsLaunch) {
  const auto h = derive_host_overhead(rule(80, 50), host(4.0, 10.0, 0.0, 1.5));
  ASSERT_TRUE(h.has_value());
  EXPECT_NEAR(h->dispatch_s, 6e-6, 1e-15);
  EXPECT_NEAR(h->launch_s, 4e-6, 1e-15);
  EXPECT_NEAR(h->eager_per_kernel_s, 10e-6, 1e-15);
  EXPECT_NEAR(h->graph_launch_s, 1.5e-6, 1e-15);
  EXPECT_NE(h->host_source.find("host.json"), std::string::npos);
}

// Without PyTorch's figure the probe's CPU workload stands in, at the rule's ratio:
// 25 x 200 ns = 5 us; without the ratio (or without a launch figure) nothing is derived.
TEST(HostRule, CpuFigureStandsInOnlyWithAKnownRatio) {
  const auto h = derive_host_overhead(rule(80, 50, 25.0), host(4.0, 0.0, 200.0));
  ASSERT_TRUE(h.has_value());
  EXPECT_NEAR(h->dispatch_s, 5e-6, 1e-15);
  EXPECT_NEAR(h->eager_per_kernel_s, 9e-6, 1e-15);
  EXPECT_FALSE(derive_host_overhead(rule(80, 50), host(4.0, 0.0, 200.0)).has_value());
  EXPECT_FALSE(derive_host_overhead(rule(80, 50), host(0.0, 10.0)).has_value());
}

// A layer of 26 kernels: 80 x 6 + 26 x 4 = 584 us, so 584 / 26 = 22.46 us between its kernels;
// outside the layers 6 kernels: 50 x 6 + 6 x 4 = 324 us, 54 us apart.
TEST(HostRule, LayerAndStepBaseSpreadOverTheirKernels) {
  const auto derived = derive_host_overhead(rule(80, 50), host(4.0, 10.0));
  ASSERT_TRUE(derived.has_value());
  const auto per = pytorch_eager_host(*derived, 2, 52.0, 6.0);
  ASSERT_TRUE(per.has_value());
  EXPECT_NEAR(per->layer_s, 584e-6 / 26, 1e-12);
  EXPECT_NEAR(per->other_s, 54e-6, 1e-12);
  // No rule (today's constants, or no layer constant): the caller keeps its old path.
  EXPECT_FALSE(pytorch_eager_host(rule(80, 50), 2, 52.0, 6.0).has_value());
  EXPECT_FALSE(pytorch_eager_host(*derive_host_overhead(rule(0, 50), host(4.0, 10.0)), 2, 52.0, 6.0)
                   .has_value());
}

// A host-bound PyTorch eager step is the host's time: Llama 3.2 1B decode at batch 1, 16 layers
// of 26 kernels and 6 kernels outside them: 16 x 584 + 324 = 9668 us of host time, and the
// replay of the launch queue at those spacings.
TEST(HostRule, EagerStepFollowsTheRule) {
  const ModelConfig model = load_model("llama-3.2-1b");
  const HardwareSpec hw = load_hardware("h100-sxm");
  const RooflineCostModel cost(hw, load_delay_factors(hw));
  StepContext c;
  c.model = &model;
  c.cost = &cost;
  c.plan = kernel_plan(Framework::pytorch, true);
  c.framework = Framework::pytorch;
  c.shard = shard_dims(model, 1);
  c.cuda_graphs = false;
  c.host = *derive_host_overhead(rule(80, 50), host(4.0, 10.0, 0.0, 1.5));
  const StepShape shape{Phase::decode, 1, 1, 512};
  const StepPrediction step = predict_step(c, shape);
  ASSERT_EQ(step.kernels, 16 * 26 + 6);
  EXPECT_NEAR(step.time_s, replay_launch_queue(step.ops, 16, 54e-6, 584e-6 / 26), 1e-12);
  EXPECT_GE(step.time_s, 9668e-6 - 1e-12);
  EXPECT_LE(step.time_s, 9668e-6 + step.gpu_s);
  // Under a CUDA graph: the kernels plus one measured graph launch.
  c.cuda_graphs = true;
  const StepPrediction graphed = predict_step(c, shape);
  EXPECT_NEAR(graphed.time_s, graphed.gpu_s + 1.5e-6, 1e-12);
}

TEST(HostRule, HostsWithoutAMeasurementKeepTodaysConstantsMarked) {
  const HostOverhead today = host_overhead_for("h100-sxm", "none");
  EXPECT_EQ(today.dispatch_s, 0.0);
  EXPECT_GT(today.pytorch_layer_s, 0.0);
  EXPECT_NE(today.host_source.find("today's constants"), std::string::npos);

  const HostOverhead h100 = host_overhead_for("h100-sxm");
  EXPECT_GT(h100.dispatch_s, 0.0);
  EXPECT_GT(h100.pytorch_layer_dispatches, 0.0);
  EXPECT_NE(h100.host_source.find("data/hosts/h100-sxm.json"), std::string::npos);

  const HostOverhead t4 = host_overhead_for("t4");
  EXPECT_EQ(t4.dispatch_s, 0.0);
  EXPECT_DOUBLE_EQ(t4.pytorch_layer_s, today.pytorch_layer_s);
  EXPECT_EQ(t4.host_source.rfind("PLACEHOLDER", 0), 0u);

  EXPECT_THROW(host_overhead_for("h100-sxm", "/nonexistent/host.json"), InputError);
}

}  // namespace
}  // namespace inferlab
