#pragma once
#include <vector>

#include "cost/tilesim/tilesim_cost.hpp"
#include "predict/options.hpp"
#include "predict/step_predictor.hpp"

namespace inferlab {

// One LLM step on a hardware template over tp x pp devices (`inferlab simulate`).
struct SimulatedOp {
  PricedOp priced;
  TileSimBreakdown breakdown;  // one instance
};

struct SimulationResult {
  double time_s = 0.0;       // the step's latency through every pipeline stage
  double stage_s = 0.0;      // one stage (the first: embedding plus its layers)
  double per_layer_s = 0.0;  // one decoder layer on one device
  double p2p_s = 0.0;        // one activation hand-off between stages
  int64_t layers_per_stage = 0;
  double weights_per_device_bytes = 0.0, kv_per_device_bytes = 0.0, capacity_bytes = 0.0;
  bool fits = false;
  std::vector<SimulatedOp> ops;  // the operators of one stage, per device
};

// Tensor parallelism shards each layer over `tp` devices; pipeline parallelism cuts the layers
// into `pp` stages run one after the other for a single step, with the activations handed
// over a link between stages. Throws InputError when tp x pp exceeds the template's node or
// tp does not divide the model.
SimulationResult simulate_step(const TileSimCostModel& cost, const HardwareSpec& spec,
                               const ModelConfig& model, const StepShape& shape,
                               const PredictOptions& options, int pp);

}  // namespace inferlab
