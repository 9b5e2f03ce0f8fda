#pragma once
#include "cost/cost_model.hpp"
#include "hw/hardware_spec.hpp"
#include "model/model_config.hpp"
#include "predict/framework.hpp"
#include "predict/memory.hpp"
#include "predict/options.hpp"
#include "predict/step_predictor.hpp"

namespace inferlab {

// One batch of identical requests from prompt to last token. The prefill makes the first
// token (with framework inferlab always launched eagerly, as the engine runs it); each of the
// output_tokens - 1 decode steps is priced at its own context length (input + 1 ... input + output
// - 1), and their sum is the decode time.
struct RequestPrediction {
  StepPrediction prefill;
  StepPrediction first_decode;  // the breakdown shown for decode (context input + 1)
  double prefill_s = 0.0;
  double ttft_s = 0.0;
  double decode_total_s = 0.0;
  double tpot_s = 0.0;
  double e2e_s = 0.0;
  double decode_tokens_per_s = 0.0;  // batch x decode steps over decode time
  double total_tokens_per_s = 0.0;   // batch x output tokens over end-to-end time
  int64_t decode_steps = 0;
  MemoryEstimate memory;
};

// The inputs of a prediction, resolved once (precision, plan, sharding) so that sweeps reuse
// them.
StepContext make_step_context(const ModelConfig& model, const HardwareSpec& hardware,
                              const CostModel& cost, const PredictOptions& options,
                              const HostOverhead& host);

RequestPrediction predict_request(const ModelConfig& model, const HardwareSpec& hardware,
                                  const CostModel& cost, const PredictOptions& options,
                                  const HostOverhead& host);

}  // namespace inferlab
