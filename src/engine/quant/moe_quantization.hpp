#pragma once
// Mixture-of-experts models run with bf16 weights and activations only (the CPU reference's
// experts are bf16-as-fp32; engine/moe_support.hpp says where MoE runs at all). One rule and one
// message for every path that would quantize one, checked before any weight is read.
#include "engine/llama_config.hpp"
#include "engine/quant/formats.hpp"
#include "util/error.hpp"

namespace inferlab::engine {

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
