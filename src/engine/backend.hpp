#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "engine/kv_cache.hpp"
#include "engine/llama_config.hpp"

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

// One model on one device with its paged KV cache. The CPU reference (cpu/cpu_backend) and the
// CUDA backend implement it; the generate loop and the serving executor call it.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual const LlamaConfig& config() const = 0;
  virtual const KvCacheLayout& kv_layout() const = 0;
  // Runs every sequence's new tokens, writes their keys and values into the cache and returns
  // logits. Token ids outside the vocabulary are an InputError; a block table that does not
  // cover the positions or names a block outside the pool is std::invalid_argument.
  virtual ForwardResult forward(const ForwardBatch& batch) = 0;
};

// Checks a batch against a model and cache layout (the checks forward() promises).
void validate_batch(const ForwardBatch& batch, const LlamaConfig& config,
                    const KvCacheLayout& layout);

}  // namespace inferlab::engine
