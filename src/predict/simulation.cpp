#include "predict/simulation.hpp"

#include <cmath>
#include <string>

#include "model/footprint.hpp"
#include "predict/request_predictor.hpp"
#include "util/error.hpp"

namespace inferlab {

SimulationResult simulate_step(const TileSimCostModel& cost, const HardwareSpec& spec,
                               const ModelConfig& model, const StepShape& shape,
                               const PredictOptions& options, int pp) {
  const auto& hw = cost.hardware();
  const int tp = options.tp;
  if (pp < 1 || pp > model.num_layers) {
    throw InputError("--pp must be in [1, " + std::to_string(model.num_layers) + "] for " +
                     model.name + ", got " + std::to_string(pp));
  }
  if (static_cast<int64_t>(tp) * pp > hw.node.devices) {
    throw InputError("tp x pp = " + std::to_string(tp * pp) + " devices, but the template " +
                     hw.name + " has " + std::to_string(hw.node.devices) + " per node");
  }
  SimulationResult r;
  r.layers_per_stage = (model.num_layers + pp - 1) / pp;
  ModelConfig stage = model;
  stage.num_layers = r.layers_per_stage;
  StepContext context = make_step_context(stage, spec, cost, options, HostOverhead{});
  StepPrediction step = predict_step(context, shape);
  double per_layer_s = 0.0, outside_s = 0.0;
  for (const auto& p : step.ops) {
    (p.op.scope == Scope::per_layer ? per_layer_s : outside_s) += p.total_s();
    r.ops.push_back({p, cost.simulate(p.op)});
  }
  r.per_layer_s = per_layer_s / static_cast<double>(r.layers_per_stage);
  r.stage_s = per_layer_s + outside_s;
  // Between stages the hidden states of the step's tokens cross one link.
  const double activation_bytes = static_cast<double>(shape.batch * shape.new_tokens) *
                                  model.hidden_size * dtype_bytes(context.precision.float_dtype);
  r.p2p_s = activation_bytes / hw.node.link_bandwidth_bps + hw.node.link_latency_s;
  r.time_s = r.per_layer_s * static_cast<double>(model.num_layers) + outside_s +
             static_cast<double>(pp - 1) * r.p2p_s;
  // Memory per device: its stage's share of the weights and of the KV cache.
  ShardDims shard = shard_dims(model, tp);
  r.weights_per_device_bytes = weight_bytes_per_device(model, context.precision, shard) / pp;
  r.kv_per_device_bytes = static_cast<double>(shape.batch * shape.context) *
                          kv_bytes_per_token(model, context.precision.kv, shard) / pp;
  r.capacity_bytes = hw.memory.capacity_bytes;
  r.fits = r.weights_per_device_bytes + r.kv_per_device_bytes <=
           options.gpu_memory_utilization * r.capacity_bytes;
  return r;
}

}  // namespace inferlab
