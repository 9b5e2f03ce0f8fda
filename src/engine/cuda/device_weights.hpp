#pragma once
// A Llama-family model's weights on the GPU, bf16, in the layout the CUDA backend's kernels
// read: q/k/v fused into one [q_dim + 2 kv_dim, hidden] matrix (and their biases into one
// vector), gate/up fused into one [2 intermediate, hidden] matrix, everything in one allocation.
#include <cuda_bf16.h>

#include <cstdint>
#include <vector>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda_backend.hpp"

namespace inferlab::engine::cuda {

struct DeviceLayer {
  const __nv_bfloat16* input_norm = nullptr;  // [hidden]
  const __nv_bfloat16* qkv = nullptr;         // [q_dim + 2 kv_dim, hidden]
  const __nv_bfloat16* qkv_bias = nullptr;    // [q_dim + 2 kv_dim] or null
  const __nv_bfloat16* o_proj = nullptr;      // [hidden, q_dim]
  const __nv_bfloat16* post_norm = nullptr;   // [hidden]
  const __nv_bfloat16* gate_up = nullptr;     // [2 intermediate, hidden]
  const __nv_bfloat16* down = nullptr;        // [hidden, intermediate]
};

class DeviceWeights {
 public:
  // Reads every tensor from `source` (several at once on the host's cores) and copies it to its
  // place on the device.
  DeviceWeights(const LlamaConfig& config, const TensorSource& source);

  // Device bytes the weights take (what DeviceWeights allocates).
  static int64_t bytes_for(const LlamaConfig& config);
  int64_t bytes() const { return static_cast<int64_t>(arena_.bytes()); }

  const __nv_bfloat16* embed_tokens = nullptr;  // [vocab, hidden]
  const __nv_bfloat16* final_norm = nullptr;    // [hidden]
  const __nv_bfloat16* lm_head = nullptr;       // [vocab, hidden]; embed_tokens when tied
  std::vector<DeviceLayer> layers;

 private:
  DeviceBuffer<__nv_bfloat16> arena_;
};

}  // namespace inferlab::engine::cuda
