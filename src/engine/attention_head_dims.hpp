#pragma once
// The head sizes the CUDA engine's attention takes: every multiple of 64 up to 256 (64 and 128:
// Llama, Mistral, Qwen; 192; 256: Gemma). The kernels are templated on the head size and
// instantiated for these four (attention_*.cu); the CPU reference takes any size. Plain C++17,
// so that the .cu files, the backend's checks and the tests share one rule and one message.
#include <cstdint>
#include <string>

namespace inferlab::engine {

inline constexpr int64_t kMaxAttentionHeadDim = 256;

constexpr bool attention_head_dim_supported(int64_t head_dim) {
  return head_dim >= 64 && head_dim <= kMaxAttentionHeadDim && head_dim % 64 == 0;
}

// What is wrong with an unsupported head size, for an error message.
inline std::string attention_head_dim_problem(int64_t head_dim) {
  return "head_dim " + std::to_string(head_dim) +
         " is not supported by the CUDA attention kernels (they take 64, 128, 192 or 256: a "
         "multiple of 64 up to 256)";
}

// Why the CUDA engine refuses model `model_name` (an InputError's message).
inline std::string cuda_head_dim_refusal(const std::string& model_name, int64_t head_dim) {
  return model_name + ": " + attention_head_dim_problem(head_dim) +
         "; the CPU reference (--device cpu) runs any head size";
}

}  // namespace inferlab::engine
