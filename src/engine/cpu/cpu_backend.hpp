#pragma once
#include <memory>
#include <vector>

#include "engine/backend.hpp"
#include "engine/kv_cache.hpp"
#include "engine/llama_weights.hpp"

namespace inferlab::engine {

// The fp32 reference forward pass of a Llama-family model, plain loops, one sequence after
// another: embedding gather, per layer RMSNorm → Q/K/V (+ bias) → RoPE → KV write into the
// paged cache → causal GQA attention over the cached prefix and the new tokens → O projection +
// residual → RMSNorm → SwiGLU MLP + residual; final RMSNorm and the LM head (tied or not) on the
// last token of each sequence, or on every new token when asked.
class CpuBackend : public Backend {
 public:
  // The cache holds num_blocks blocks of block_size tokens.
  CpuBackend(LlamaConfig config, LlamaWeights weights, int64_t block_size, int64_t num_blocks);

  const LlamaConfig& config() const override { return config_; }
  const KvCacheLayout& kv_layout() const override { return cache_.layout(); }
  ForwardResult forward(const ForwardBatch& batch) override;
  const LlamaWeights& weights() const { return weights_; }

 private:
  // Runs one chunk and appends its logits rows.
  void forward_chunk(const SequenceChunk& chunk, std::vector<float>& logits);

  LlamaConfig config_;
  LlamaWeights weights_;
  CpuKvCache cache_;
  std::vector<double> inv_freq_;
};

// Memory the CPU backend takes for `config` with a cache of `max_tokens` tokens: fp32 weights
// plus fp32 keys and values (the mapped checkpoint is released after loading). For "does not
// fit" messages before anything is allocated.
int64_t cpu_backend_bytes(const LlamaConfig& config, int64_t max_tokens, int64_t block_size = 16);

// A CPU backend whose cache holds `max_tokens` tokens (rounded up to whole blocks).
std::unique_ptr<CpuBackend> make_cpu_backend(LlamaModel model, int64_t max_tokens,
                                             int64_t block_size = 16);

}  // namespace inferlab::engine
