#pragma once
// Where the engine runs a mixture-of-experts model (llama_config.hpp's MoeParams): the CPU
// reference, with bf16-as-fp32 weights (a quantized KV cache too), one process, no tensor
// parallelism. The CUDA backend's MoE kernels come later. One rule and one message for each
// path that refuses, checked before any GPU is looked for or weight read.
#include <string>

#include "engine/llama_config.hpp"
#include "engine/quant/formats.hpp"
#include "util/error.hpp"

namespace inferlab::engine {

// Why the CUDA backend refuses `config` (an InputError's message), or "" when it is dense.
inline std::string cuda_moe_refusal(const LlamaConfig& config) {
  if (!config.model.is_moe()) return "";
  return config.model.name + ": mixture of experts (" + std::to_string(config.model.num_experts) +
         " experts, top " + std::to_string(config.model.experts_per_token) +
         ") is not supported by the CUDA backend yet; the CPU reference (--device cpu) runs it";
}

// Throws InputError when `config` is a mixture of experts and `quant` quantizes weights or
// activations (the KV cache may be quantized).
inline void check_moe_quantization(const LlamaConfig& config, const QuantConfig& quant) {
  if (!config.model.is_moe()) return;
  if (quant.weights != DType::bf16 || quant.activations != DType::bf16) {
    throw InputError(config.model.name +
                     ": quantized weights or activations are not supported for mixture-of-experts "
                     "models; run them with bf16 weights (a quantized KV cache is fine)");
  }
}

}  // namespace inferlab::engine
