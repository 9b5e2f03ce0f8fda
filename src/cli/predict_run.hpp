#pragma once
#include <cstdint>

#include "cli/common_args.hpp"
#include "model/model_config.hpp"
#include "predict/request_predictor.hpp"

namespace inferlab::cli {

// One batch of requests predicted from the common options, as `predict` and
// `report --kind predict` both show it.
struct PredictRun {
  ModelConfig model;
  LoadedHardware hw;
  PredictOptions options;
  Precision precision;  // as resolved for the hardware
  RequestPrediction prediction;
};
PredictRun run_prediction(const CommonArgs& common, int64_t batch, int64_t input_tokens,
                          int64_t output_tokens);

}  // namespace inferlab::cli
