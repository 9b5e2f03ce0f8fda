#pragma once
// A Llama-family model's weights on the GPU in the layout the CUDA backend's kernels read:
// q/k/v fused into one [q_dim + 2 kv_dim, hidden] matrix (and their biases into one vector),
// gate/up fused into one [2 intermediate, hidden] matrix (a mixture of experts: one per expert,
// all of a layer's experts in one block, bf16 only). The projections (and the LM head) are
// DeviceMatrix views in the QuantConfig's weight format: bf16 in the bf16 arena with the
// embedding, norms and biases, or quantized (QuantizedMatrix's layout) in a second arena.
#include <cuda_bf16.h>

#include <cstdint>
#include <vector>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/projection.hpp"
#include "engine/cuda_backend.hpp"
#include "engine/quant/formats.hpp"
#include "engine/quant/quantized_model.hpp"

namespace inferlab::engine::cuda {

struct DeviceLayer {
  const __nv_bfloat16* input_norm = nullptr;  // [hidden]
  const __nv_bfloat16* qkv_bias = nullptr;    // [q_dim + 2 kv_dim] or null
  const __nv_bfloat16* post_norm = nullptr;   // [hidden]
  const __nv_bfloat16* q_norm = nullptr;      // [head_dim]: Qwen3's per-head norms, or null
  const __nv_bfloat16* k_norm = nullptr;      // [head_dim]
  DeviceMatrix qkv;                           // [q_dim + 2 kv_dim, hidden]
  DeviceMatrix o_proj;                        // [hidden, q_dim]
  DeviceMatrix gate_up;                       // [2 intermediate, hidden]
  DeviceMatrix down;                          // [hidden, intermediate]
  // A mixture-of-experts layer (gate_up and down above are then empty): the router, and every
  // expert's fused gate/up and down matrices back to back, so that one kernel reaches them all.
  const __nv_bfloat16* router = nullptr;           // [num_experts, hidden]
  const __nv_bfloat16* experts_gate_up = nullptr;  // [num_experts][2 intermediate, hidden]
  const __nv_bfloat16* experts_down = nullptr;     // [num_experts][hidden, intermediate]
};

// Expert `expert`'s bf16 [out, in] matrix in a layer's block of experts (DeviceLayer's
// experts_gate_up or experts_down).
DeviceMatrix expert_matrix(const __nv_bfloat16* experts, int64_t out, int64_t in,
                           int64_t expert = 0);

// Bytes the GPU reads for one projection (data, scales, zeros): the roofline's weight bytes.
double matrix_bytes(const DeviceMatrix& m);

class DeviceWeights {
 public:
  // Reads every tensor through `loader` (several at once on the host's cores; quantization
  // happens there) and copies it to its place on the device. lm_head_rows > 0: the LM head has
  // that many rows (a tensor-parallel rank's vocab shard), not the vocabulary.
  DeviceWeights(const LlamaConfig& config, const QuantConfig& quant, const WeightLoader& loader,
                int64_t lm_head_rows = 0);

  // Device bytes the weights take for `quant` (what DeviceWeights allocates).
  static int64_t bytes_for(const LlamaConfig& config, const QuantConfig& quant,
                           int64_t lm_head_rows = 0);

  const __nv_bfloat16* embed_tokens = nullptr;  // [vocab, hidden]
  const __nv_bfloat16* final_norm = nullptr;    // [hidden]
  DeviceMatrix lm_head;  // [vocab or a rank's shard, hidden]; the embedding when tied+bf16
  std::vector<DeviceLayer> layers;

 private:
  DeviceBuffer<__nv_bfloat16> arena_;      // bf16 tensors
  DeviceBuffer<unsigned char> quantized_;  // quantized projections
};

}  // namespace inferlab::engine::cuda
