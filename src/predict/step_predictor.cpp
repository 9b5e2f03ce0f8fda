#include "predict/step_predictor.hpp"

#include <algorithm>

#include "cost/engine/engine_cost.hpp"
#include "model/engine_blocks.hpp"

namespace inferlab {

namespace {
// Runs the kernels of ops in [first, last) of one scope through the queue.
struct LaunchQueue {
  double host_s = 0.0, gpu_end_s = 0.0;
  double per_kernel_s;
  void run(const PricedOp& p) {
    double per_launch_s = p.cost.time_s / std::max(1, p.op.kernels);
    for (int k = 0; k < std::max(1, p.op.kernels); ++k) {
      host_s += per_kernel_s;
      gpu_end_s = std::max(gpu_end_s, host_s) + per_launch_s;
    }
  }
};
}  // namespace

double replay_launch_queue(const std::vector<PricedOp>& ops, int64_t layers,
                           double host_per_kernel_s, double host_per_layer_kernel_s) {
  LaunchQueue queue{0.0, 0.0, host_per_kernel_s};
  for (const auto& p : ops) {
    if (p.op.scope == Scope::pre_layers) {
      for (int64_t i = 0; i < p.op.count; ++i) queue.run(p);
    }
  }
  if (host_per_layer_kernel_s >= 0.0) queue.per_kernel_s = host_per_layer_kernel_s;
  for (int64_t layer = 0; layer < layers; ++layer) {
    for (const auto& p : ops) {
      if (p.op.scope == Scope::per_layer && layer < p.op.count) queue.run(p);
    }
  }
  queue.per_kernel_s = host_per_kernel_s;
  for (const auto& p : ops) {
    if (p.op.scope == Scope::post_layers) {
      for (int64_t i = 0; i < p.op.count; ++i) queue.run(p);
    }
  }
  return queue.gpu_end_s;
}

void apply_sustained_slowdown(double slowdown, StepPrediction& step) {
  if (slowdown <= 1.0 || step.gpu_s <= 0.0) return;
  double compute_bound_s = 0.0;
  for (const auto& p : step.ops) {
    if (p.cost.bound == Bound::compute) compute_bound_s += p.total_s();
  }
  // The clock drops as far as the power cap needs: a step that computes all the time runs at
  // the fully sustained clock, one that mostly streams memory (decode) keeps its boost clock.
  const double factor = 1.0 + (slowdown - 1.0) * compute_bound_s / step.gpu_s;
  step.gpu_s = 0.0;
  for (auto& p : step.ops) {
    if (p.cost.bound == Bound::compute) {
      p.cost.compute_s *= factor;
      p.cost.combine_parts();
    }
    step.gpu_s += p.total_s();
  }
}

double tensor_core_duty(const StepPrediction& step) {
  double busy_s = 0.0;
  for (const auto& p : step.ops) {
    if (p.cost.bound == Bound::compute && engine_tensor_core_op(p.op)) busy_s += p.total_s();
  }
  return step.gpu_s > 0.0 ? busy_s / step.gpu_s : 0.0;
}

void apply_matrix_clock(double gain, StepPrediction& step) {
  const double factor = engine_clock_factor(gain, tensor_core_duty(step));
  step.gpu_s = 0.0;
  for (auto& p : step.ops) {
    if (p.cost.bound == Bound::compute && engine_tensor_core_op(p.op)) {
      p.cost.compute_s *= factor;
      p.cost.combine_parts();
    }
    step.gpu_s += p.total_s();
  }
}

StepPrediction predict_step(const StepContext& c, const StepShape& shape) {
  std::vector<Op> ops;
  build_step_graph(*c.model, shape, c.precision, c.plan, c.shard, ops);
  // The engine's per-expert mixture-of-experts GEMMs read the experts' row counts on the host, a
  // synchronisation a layer: such a pass runs eagerly even with graphs on.
  const ModelConfig& m = *c.model;
  const bool moe_syncs =
      c.framework == Framework::inferlab && c.plan.engine && m.is_moe() &&
      !engine_moe_capturable(shape.batch * shape.new_tokens, m, c.shard.intermediate);
  const bool graphs = c.cuda_graphs && !moe_syncs;
  StepPrediction step;
  step.ops.reserve(ops.size());
  for (Op& op : ops) {
    op.eager_launch = !graphs;
    PricedOp priced{op, c.cost->price(op), std::nullopt};
    if (c.price_isolated) priced.isolated_s = c.cost->isolated_time_s(op);
    step.gpu_s += priced.total_s();
    step.kernels += op.count * op.kernels;
    if (op.programmatic_launch) step.programmatic_kernels += op.count * op.kernels;
    step.ops.push_back(priced);
  }
  apply_sustained_slowdown(c.cost->sustained_compute_slowdown(), step);
  // The engine's calibration was fitted on its whole steps: its own host constants.
  const auto fitted = c.framework == Framework::inferlab ? c.cost->fitted_step_costs()
                                                         : std::optional<FittedStepCosts>();
  if (fitted && fitted->matrix_clock_gain > 0.0) {
    apply_matrix_clock(fitted->matrix_clock_gain, step);
  }
  if (fitted) {
    step.time_s =
        graphs ? step.gpu_s + static_cast<double>(step.kernels) * fitted->graph_per_kernel_s +
                     static_cast<double>(step.programmatic_kernels) *
                         fitted->graph_programmatic_per_kernel_s +
                     fitted->graph_step_s
               : replay_launch_queue(step.ops, c.model->num_layers, fitted->host_per_kernel_s) +
                     fitted->eager_step_s;
    // Each synchronisation drains the queue: the device waits for the host's round trip.
    if (moe_syncs) step.time_s += static_cast<double>(m.num_layers) * fitted->sync_pass_s;
  } else if (graphs) {
    step.time_s = step.gpu_s + c.host.graph_launch_s;
  } else {
    double layer_kernels = 0.0, other_kernels = 0.0;
    for (const auto& p : step.ops) {
      double k = static_cast<double>(p.op.count * p.op.kernels);
      (p.op.scope == Scope::per_layer ? layer_kernels : other_kernels) += k;
    }
    const auto ruled =
        c.framework == Framework::pytorch
            ? pytorch_eager_host(c.host, c.model->num_layers, layer_kernels, other_kernels)
            : std::nullopt;
    if (ruled) {
      step.time_s =
          replay_launch_queue(step.ops, c.model->num_layers, ruled->other_s, ruled->layer_s);
    } else if (c.framework == Framework::pytorch && c.host.pytorch_layer_s > 0.0 &&
               layer_kernels > 0) {
      double layers = static_cast<double>(c.model->num_layers);
      step.time_s = replay_launch_queue(step.ops, c.model->num_layers,
                                        c.host.pytorch_step_base_s / std::max(1.0, other_kernels),
                                        c.host.pytorch_layer_s * layers / layer_kernels);
    } else {
      const double per_kernel_s =
          c.framework == Framework::inferlab && c.host.engine_per_kernel_s > 0
              ? c.host.engine_per_kernel_s
              : c.host.eager_per_kernel_s;
      step.time_s = replay_launch_queue(step.ops, c.model->num_layers, per_kernel_s);
    }
  }
  return step;
}

}  // namespace inferlab
