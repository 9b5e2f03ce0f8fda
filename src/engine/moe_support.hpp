#pragma once
// Where the engine runs a mixture-of-experts model (llama_config.hpp's MoeParams): the CPU
// reference, with bf16-as-fp32 weights (a quantized KV cache too), one process, no tensor
// parallelism. The CUDA backend's MoE kernels come later. One rule and one message for each
// path that refuses, checked before any GPU is looked for or weight read (quantized MoE:
// engine/quant/moe_quantization.hpp).
#include <string>

#include "engine/llama_config.hpp"

namespace inferlab::engine {

// Why the CUDA backend refuses `config` (an InputError's message), or "" when it is dense.
inline std::string cuda_moe_refusal(const LlamaConfig& config) {
  if (!config.model.is_moe()) return "";
  return config.model.name + ": mixture of experts (" + std::to_string(config.model.num_experts) +
         " experts, top " + std::to_string(config.model.experts_per_token) +
         ") is not supported by the CUDA backend yet; the CPU reference (--device cpu) runs it";
}

}  // namespace inferlab::engine
