#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "hw/hardware_spec.hpp"
#include "model/model_config.hpp"
#include "predict/options.hpp"

namespace inferlab {

// What a prediction rests on that no measurement has checked. Measured so far (docs/compare.md's
// accuracy section, docs/MEASUREMENTS.md): plain PyTorch Llama 3.2 1B / 3B and Llama 3 8B steps
// with bf16 weights, activations and KV cache, SDPA attention, one GPU, eager and CUDA graphs,
// on an H100 SXM (fitted and held out) and an H200 (held out), priced by the calibrated model
// (the roofline and tilesim models on the H100 only). Anything else gets one plain sentence
// here; `predict` prints them under its table and in JSON as "unvalidated".
std::vector<std::string> unvalidated_paths(const ModelConfig& model, const PredictOptions& options,
                                           const Precision& precision, const HardwareSpec& hardware,
                                           std::string_view cost_name);

}  // namespace inferlab
