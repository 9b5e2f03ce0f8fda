#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/backend.hpp"
#include "engine/cpu/cpu_backend.hpp"
#include "engine/host_communicator.hpp"

namespace inferlab::engine {

// The CPU reference under Megatron-style tensor parallelism (engine/tp/shard.hpp): one
// CpuBackend per rank, each holding its shard of the weights and of the KV heads, run in a
// thread of its own per forward pass; the ranks meet in a HostCommunicator (all-reduce after
// the O and down projections, all-gather of the LM head's vocab rows). It checks the sharded
// math, the thing a multi-GPU run adds, against the single-device reference: with bf16 or
// weight-only formats the logits differ only by fp32 rounding (partial sums added in another
// order). With fp8 weights or W8A8 each rank quantizes its slice of the O and down inputs with
// per-token scales of its own, as GPU tensor-parallel engines do (vLLM's row-parallel layers),
// so those logits differ from the single device's by that quantization too.
class TensorParallelCpuBackend : public Backend {
 public:
  // `model` in its final (quantized and dequantized) weights; the cache of every rank holds
  // num_blocks blocks of block_size tokens.
  TensorParallelCpuBackend(const LlamaModel& model, int64_t ranks, int64_t block_size,
                           int64_t num_blocks, QuantConfig quant);

  const LlamaConfig& config() const override { return config_; }
  // The cache as the scheduler sees it (blocks and tokens); num_kv_heads counts every rank's.
  const KvCacheLayout& kv_layout() const override { return layout_; }
  ForwardResult forward(const ForwardBatch& batch) override;
  // Every rank routes alike (the router is whole on each): rank 0's.
  RoutingStats last_forward_routing() const override {
    return ranks_.front()->last_forward_routing();
  }
  void fill_kv_cache_random(uint64_t seed) override;
  // Every rank's share of a block, rank after rank.
  int64_t kv_block_host_bytes() const override;
  std::unique_ptr<KvHostCopy> copy_kv_blocks_to_host(std::span<const int32_t> blocks) override;
  void copy_kv_blocks_from_host(std::span<const int32_t> blocks,
                                std::span<const std::byte> host) override;
  int64_t ranks() const { return static_cast<int64_t>(ranks_.size()); }

 private:
  LlamaConfig config_;
  KvCacheLayout layout_;
  std::unique_ptr<HostCommunicator> group_;
  std::vector<std::unique_ptr<CpuBackend>> ranks_;
};

// Rank `rank` of `ranks` of `model` (in its final weights, quantize_for_cpu's): its shard in a
// CpuBackend of its own, not yet in a group (CpuBackend::join_group).
std::unique_ptr<CpuBackend> make_cpu_rank(const LlamaModel& model, int64_t rank, int64_t ranks,
                                          int64_t block_size, int64_t num_blocks,
                                          const QuantConfig& quant);

// make_cpu_backend's model split `ranks` ways (check_tensor_parallel's InputError when it does
// not split): quantized whole first, so every rank's weights are the single device's slices.
std::unique_ptr<TensorParallelCpuBackend> make_tp_cpu_backend(LlamaModel model, int64_t ranks,
                                                              int64_t max_tokens,
                                                              int64_t block_size = 16,
                                                              const QuantConfig& quant = {});

}  // namespace inferlab::engine
