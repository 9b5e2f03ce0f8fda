#include "predict/validity.hpp"

#include <fmt/format.h>

namespace inferlab {

namespace {
bool is_16_bit_float(DType dtype) {
  return dtype == DType::bf16 || dtype == DType::fp16;
}
bool measured_gpu(const std::string& name) {
  return name == "h100-sxm" || name == "h200";
}
}  // namespace

std::vector<std::string> unvalidated_paths(const ModelConfig& model, const PredictOptions& options,
                                           const Precision& precision, const HardwareSpec& hardware,
                                           std::string_view cost_name) {
  std::vector<std::string> notes;
  if (options.framework == Framework::vllm) {
    notes.push_back(
        "the vllm kernel list (fused QKV and gate/up, add+RMSNorm, RoPE+KV write, paged "
        "attention) has not been checked against a vLLM run; --framework pytorch has");
  }
  const bool engine_costs = cost_name == "engine";
  if (options.framework == Framework::inferlab && !engine_costs) {
    notes.push_back(fmt::format(
        "the inferlab kernel list is priced with the PyTorch-fitted kernel costs (no engine "
        "calibration for {}: inferlab fit --engine); `inferlab bench --compare` sets it beside "
        "the engine's measured steps",
        hardware.name));
  }
  if (!measured_gpu(hardware.name)) {
    notes.push_back(fmt::format(
        "no step was measured on {}: its ceilings come from its {}, its efficiencies from "
        "another GPU",
        hardware.name, hardware.profile ? "measured profile" : "spec sheet"));
  } else if (cost_name != "calibrated" && !engine_costs && hardware.name != "h100-sxm") {
    notes.push_back(fmt::format("the {} model was checked on the H100 only", cost_name));
  }
  if (model.is_moe() || model.gpt_style || model.qkv_bias) {
    notes.push_back(fmt::format(
        "no step of this model family ({}) was measured; Llama 3.2 1B/3B and Llama 3 8B were",
        model.is_moe() ? "mixture of experts" : (model.gpt_style ? "GPT style" : "QKV bias")));
  }
  // The engine's calibration lists the kernels it has not fitted itself (`predict` adds them).
  if (!engine_costs &&
      (!is_16_bit_float(precision.weights) || !is_16_bit_float(precision.activations) ||
       !is_16_bit_float(precision.kv))) {
    notes.push_back(
        fmt::format("quantized kernels (weights {}, activations {}, KV {}) have not been measured",
                    dtype_name(precision.weights), dtype_name(precision.activations),
                    dtype_name(precision.kv)));
  }
  if (options.tp > 1) {
    const int n = static_cast<int>(options.tp);
    const bool in_graph =
        hardware.profile &&
        hardware.profile->in_stream_collectives.nccl_graph.find(Collective::all_reduce, n);
    const bool host_timed =
        hardware.profile && hardware.profile->collectives.find(Collective::all_reduce, n);
    // In-graph curves: the pricing PyTorch's TP steps on 4x H200 were checked against (held out
    // within 2.3%, docs/MEASUREMENTS.md §34), so no note.
    if (!in_graph) {
      notes.push_back(
          host_timed
              ? fmt::format("tensor parallelism: collectives priced from the profile's NCCL "
                            "curves over {} GPUs (measured outside a CUDA graph; the per-hop "
                            "latency from the spec sheet); no TP step has been measured against "
                            "them",
                            n)
              : fmt::format("tensor parallelism: collectives priced from the spec sheet's "
                            "interconnect (the profile has no NCCL curve over {} GPUs), not "
                            "measured",
                            n));
    }
  }
  if (!options.flash_attention && !engine_costs) {
    notes.push_back("unfused attention has not been measured");
  }
  return notes;
}

}  // namespace inferlab
