#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend.hpp"
#include "engine/llama_config.hpp"
#include "engine/llama_weights.hpp"
#include "engine/tensor_source.hpp"

namespace inferlab::engine {

// True when this build has the CUDA backend and a CUDA GPU is visible.
bool cuda_device_available();
// The GPU's name and memory, for reports ("" without one).
std::string cuda_device_name();

struct CudaBackendOptions {
  int64_t block_size = 16;               // tokens per KV block
  double gpu_memory_utilization = 0.90;  // share of the GPU's memory the engine may take
  int64_t max_kv_tokens = 0;             // > 0: a cache of this many tokens instead of the rest
  int64_t max_batch_tokens = 4096;       // new tokens per forward pass (activation buffers)
  int64_t max_sequences = 256;           // sequences per forward pass
  bool sample_on_device = true;          // false: logits to the host, sampled there
  // Decode-only forward_sample calls replay a CUDA graph captured per (batch padded to a power
  // of two, context bound rounded up to a power of two), instead of launching each kernel.
  bool cuda_graphs = false;
  // Projections of one or two rows run the engine's GEMV kernel instead of cuBLASLt (off also
  // with INFERLAB_ENGINE_GEMV=0).
  bool gemv = true;
};

// Device memory the CUDA backend needs before its KV cache: bf16 weights (QKV and gate/up
// fused), activation buffers for max_batch_tokens, logits and workspaces.
int64_t cuda_backend_fixed_bytes(const LlamaConfig& config, const CudaBackendOptions& options);

// The bf16 CUDA backend. Throws InputError when there is no GPU, or when the weights and a cache
// of at least one block per sequence do not fit in gpu_memory_utilization of the GPU's memory
// (saying the sizes, before allocating).
std::unique_ptr<Backend> make_cuda_backend(const LlamaConfig& config, const TensorSource& source,
                                           const CudaBackendOptions& options);

}  // namespace inferlab::engine
