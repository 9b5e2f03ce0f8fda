#pragma once
#include <optional>
#include <vector>

#include "cost/cost_model.hpp"
#include "model/model_config.hpp"
#include "model/step_graph.hpp"
#include "predict/framework.hpp"

namespace inferlab {

struct PricedOp {
  Op op;
  OpCost cost;  // one instance in the step's stream (in-stream time)
  // One instance timed alone, L2 flushed (CostModel::isolated_time_s); priced only when the
  // step context asks for it (StepContext::price_isolated).
  std::optional<double> isolated_s;
  double total_s() const { return cost.time_s * static_cast<double>(op.count); }
};

struct StepPrediction {
  std::vector<PricedOp> ops;
  double gpu_s = 0.0;                // sum of kernel times: the step under a CUDA graph
  double time_s = 0.0;               // wall time, host launch overhead included
  int64_t kernels = 0;               // launches per step
  int64_t programmatic_kernels = 0;  // of them launched programmatically (Op::programmatic_launch)
};

// Everything fixed for one run: model, device, precision, kernel plan, sharding, host mode.
struct StepContext {
  const ModelConfig* model = nullptr;
  const CostModel* cost = nullptr;
  Precision precision;
  KernelPlan plan;
  ShardDims shard;
  bool cuda_graphs = true;
  Framework framework = Framework::vllm;
  HostOverhead host;
  // Also price each operator timed alone (PricedOp::isolated_s), for reports: it costs a
  // second pricing of every operator, so steps that are only summed leave it off.
  bool price_isolated = false;
};

// Prices every operator of the step and adds host overhead: with CUDA graphs one graph launch
// per step; without, a replay of the launch queue in which the host issues kernels
// eager_per_kernel_s apart and the GPU runs each as soon as it is issued and the previous one
// is done (so small steps are host bound and large ones GPU bound). For PyTorch with a host
// measurement, the host rule (pytorch_eager_host) spaces a layer's kernels and the others; with
// today's constants, a layer's kernels share pytorch_layer_s and the others
// pytorch_step_base_s. For inferlab priced by the engine's calibration
// (CostModel::fitted_step_costs), that calibration's host time per launch and per-step
// constants replace the host-overhead file's.
StepPrediction predict_step(const StepContext& context, const StepShape& shape);

// Scales the compute time of compute-bound ops by 1 + (slowdown - 1) x the step's
// compute-bound share of GPU time (CostModel::sustained_compute_slowdown) and re-sums gpu_s.
void apply_sustained_slowdown(double slowdown, StepPrediction& step);

// The share of the step's GPU time in compute-bound tensor-core kernels of the engine
// (engine_tensor_core_op), and those kernels' compute term scaled by engine_clock_factor at that
// share (EngineCosts::matrix_clock_gain); gpu_s re-summed.
double tensor_core_duty(const StepPrediction& step);
void apply_matrix_clock(double gain, StepPrediction& step);

// Wall time of a queue of kernels with the given GPU durations, launched host_per_kernel_s
// apart from the host (host_per_layer_kernel_s apart inside the layers when given, >= 0).
// Exposed for tests.
double replay_launch_queue(const std::vector<PricedOp>& ops, int64_t layers,
                           double host_per_kernel_s, double host_per_layer_kernel_s = -1.0);

}  // namespace inferlab
