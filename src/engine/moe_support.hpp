#pragma once
// Where the engine runs a mixture-of-experts model (llama_config.hpp's MoeParams): the CPU
// reference and the CUDA backend, with bf16 weights (a quantized KV cache too), on one device or
// split over several (engine/tp/shard.hpp: every expert's channels). One rule and one message for
// each path that refuses, checked before any GPU is looked for or weight read (quantized MoE:
// engine/quant/moe_quantization.hpp).
#include <string>

#include "engine/llama_config.hpp"

namespace inferlab::engine {

// Experts and choices per token the CUDA backend's routing kernel takes
// (engine/cuda/moe_kernels.hpp's kMoeMaxExperts, kMoeMaxTopK).
constexpr int64_t kCudaMoeMaxExperts = 256;
constexpr int64_t kCudaMoeMaxTopK = 16;

// Why the CUDA backend refuses `config`'s experts (an InputError's message), or "" when it
// runs them (or the model is dense).
// `config` is the whole model's, `tp` the ranks it is split over (each expert's intermediate
// channels divided by it; a rank's config passes tp 1).
inline std::string cuda_moe_refusal(const LlamaConfig& config, int64_t tp = 1) {
  const ModelConfig& m = config.model;
  if (!m.is_moe()) return "";
  const std::string what = m.name + ": mixture of experts (" + std::to_string(m.num_experts) +
                           " experts, top " + std::to_string(m.experts_per_token) + ")";
  if (m.num_experts > kCudaMoeMaxExperts || m.experts_per_token > kCudaMoeMaxTopK) {
    return what +
           " is beyond the CUDA backend's routing (at most 256 experts, top 16); the CPU "
           "reference (--device cpu) runs it";
  }
  if (m.hidden_size % 8 != 0 || tp < 1 || m.intermediate_size % (8 * tp) != 0) {
    return what + (tp > 1 ? " split over " + std::to_string(tp) + " GPUs" : std::string()) +
           ": the CUDA backend's expert kernels need hidden and intermediate sizes (a GPU's share) "
           "that are multiples of 8; the CPU reference (--device cpu) runs it";
  }
  return "";
}

}  // namespace inferlab::engine
