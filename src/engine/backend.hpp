#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/kv_cache.hpp"
#include "engine/llama_config.hpp"
#include "engine/routing_stats.hpp"
#include "engine/sampling.hpp"

namespace inferlab::engine {

// New tokens of one sequence for one forward pass: a whole prompt, a prefill chunk after a
// cached prefix, or one decode token. Token j sits at position cached_tokens + j; its keys and
// values go to kv_slot(block_table, block_size, cached_tokens + j), and it attends to every
// position up to its own (the cached prefix included), through the block table.
struct SequenceChunk {
  std::vector<int32_t> tokens;
  int64_t cached_tokens = 0;  // positions [0, cached_tokens) are already in the KV cache
  BlockTable block_table;     // must cover cached_tokens + tokens.size() positions
  bool all_logits = false;    // logits of every new token (teacher forcing), else the last only
};

struct ForwardBatch {
  std::vector<SequenceChunk> sequences;
};

// Logits, one row of vocab_size per returned token: sequence i's rows are
// [first_row[i], first_row[i + 1]).
struct ForwardResult {
  int64_t vocab_size = 0;
  std::vector<float> logits;
  std::vector<int64_t> first_row;  // sequences + 1 entries
  std::span<const float> row(int64_t r) const {
    return {logits.data() + r * vocab_size, static_cast<size_t>(vocab_size)};
  }
  // The last token's logits of sequence i.
  std::span<const float> last(size_t i) const { return row(first_row[i + 1] - 1); }
  int64_t rows(size_t i) const { return first_row[i + 1] - first_row[i]; }
};

// How one sequence's next token is chosen: its sampling parameters and the uniform draw the
// host's Sampler made for it (Sampler::draw), so the CPU and the GPU pick the same token.
struct SampleSpec {
  SamplingParams params;
  double uniform = 0;
};

// GPU time of one kind of kernel in the last profiled forward pass, and the bytes it moved
// (weights, activations, KV cache: what the roofline is measured against).
struct KernelClassTime {
  std::string name;  // "gemm_qkv", "attention", "norm", ...
  double seconds = 0;
  double bytes = 0;
  double flops = 0;
  int64_t launches = 0;
};

// KV blocks in host memory (preemption by swap) as copy_kv_blocks_to_host leaves them: bytes only
// the backend that copied them reads back. The CUDA backend's are page-locked, from a pool it
// keeps, so that the copies run at the host link's DMA speed and no page is pinned per swap.
class KvHostCopy {
 public:
  virtual ~KvHostCopy() = default;
  virtual std::span<const std::byte> bytes() const = 0;
};

// One in ordinary heap memory (the CPU backends').
class HeapKvHostCopy final : public KvHostCopy {
 public:
  explicit HeapKvHostCopy(std::vector<std::byte> bytes) : bytes_(std::move(bytes)) {}
  std::span<const std::byte> bytes() const override { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
};

// One model on one device with its paged KV cache. The CPU reference (cpu/cpu_backend) and the
// CUDA backend implement it; the generate loop and the serving executor call it.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual const LlamaConfig& config() const = 0;
  virtual const KvCacheLayout& kv_layout() const = 0;
  // Runs every sequence's new tokens, writes their keys and values into the cache and returns
  // logits. Token ids outside the vocabulary and positions past the model's context
  // (max_position_embeddings) are InputErrors; a block table that does not cover the positions
  // or names a block outside the pool is std::invalid_argument.
  virtual ForwardResult forward(const ForwardBatch& batch) = 0;
  // forward() and one token per sequence from its last logits, picked as `specs[i]` says. The
  // CPU does it from forward()'s logits; the CUDA backend samples on the GPU and copies back
  // only the ids.
  virtual std::vector<int32_t> forward_sample(const ForwardBatch& batch,
                                              std::span<const SampleSpec> specs);
  // forward() and one token per logit row, the rows forward() returns in its order
  // (logit_rows(batch) of them), row r picked as `row_specs[r]` says; std::invalid_argument
  // unless there is one spec per row. Speculative verification takes the argmax of its k + 1
  // rows this way: the CPU picks from forward()'s logits, the CUDA backend on the GPU, copying
  // back 4 bytes a row instead of the row's vocab_size floats.
  virtual std::vector<int32_t> forward_sample_rows(const ForwardBatch& batch,
                                                   std::span<const SampleSpec> row_specs);
  // forward_sample_rows with every row greedy: each row's argmax (the lowest id among ties; NaN
  // never wins).
  std::vector<int32_t> forward_argmax_rows(const ForwardBatch& batch);
  // Device time of the last forward pass in seconds (CUDA events around its work); negative
  // where the backend does not measure it (the CPU).
  virtual double last_forward_device_s() const { return -1; }
  // With profiling on, every kernel is bracketed by events and last_forward_profile() gives the
  // time per kernel class (it perturbs the timing a little; off by default).
  virtual void set_profiling(bool) {}
  virtual std::vector<KernelClassTime> last_forward_profile() const { return {}; }
  // A mixture of experts' routing in the last forward pass (routing_stats.hpp): the CPU records
  // every pass, the CUDA backend its profiled passes; empty for dense models and elsewhere.
  virtual RoutingStats last_forward_routing() const { return {}; }
  // Fills every slot of the KV cache with random values drawn from `seed` (benchmarks: a decode
  // step at a long context costs what its reads cost, whatever the values, so the context need
  // not be prefilled).
  virtual void fill_kv_cache_random(uint64_t seed) = 0;

  // Preemption by swap (serve --preemption swap): the contents of KV blocks (every layer's keys,
  // values and scales) copied to host memory, block after block in an order only this backend
  // reads, and back from there into blocks that need not be the same ones. A block outside the
  // pool is std::invalid_argument; copying back reads the leading blocks' bytes of `host`.
  virtual int64_t kv_block_host_bytes() const = 0;
  virtual std::unique_ptr<KvHostCopy> copy_kv_blocks_to_host(std::span<const int32_t> blocks) = 0;
  virtual void copy_kv_blocks_from_host(std::span<const int32_t> blocks,
                                        std::span<const std::byte> host) = 0;
};

// Checks the blocks of a swap against the pool and, copying back, the host copy's size.
void check_swap_blocks(std::span<const int32_t> blocks, const KvCacheLayout& layout,
                       int64_t host_bytes = -1, int64_t block_bytes = 0);

// A tensor-parallel group's host copy holds every rank's blocks, rank after rank, each rank's part
// as many blocks as were copied out (which may be more than are asked back): the parts of `host`,
// one per rank, from each rank's bytes per block.
std::vector<std::span<const std::byte>> rank_parts_of_host_copy(
    std::span<const std::byte> host, const std::vector<int64_t>& rank_block_bytes);

// The logit rows forward() returns for `batch`: every new token's of a chunk with all_logits,
// the last token's of the others.
int64_t logit_rows(const ForwardBatch& batch);
// std::invalid_argument unless `row_specs` has one entry per logit row of `batch`.
void check_row_specs(const ForwardBatch& batch, std::span<const SampleSpec> row_specs);

// Checks a batch against a model and cache layout (the checks forward() promises).
void validate_batch(const ForwardBatch& batch, const LlamaConfig& config,
                    const KvCacheLayout& layout);

}  // namespace inferlab::engine
