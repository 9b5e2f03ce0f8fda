#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/model_config.hpp"

namespace inferlab::engine {

// The paged KV cache's shape: a pool of num_blocks blocks of block_size tokens, per layer, each
// token holding num_kv_heads × head_dim keys and as many values. Every backend keeps its own
// storage of this shape (fp32 on the CPU, bf16 on the GPU); the block tables and slot mapping
// below are shared by the backends, the generate loop and the scheduler.
struct KvCacheLayout {
  int64_t num_layers = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t block_size = 16;
  int64_t num_blocks = 0;
  int64_t slots() const { return block_size * num_blocks; }
  int64_t blocks_for(int64_t tokens) const { return (tokens + block_size - 1) / block_size; }
  // Elements (keys + values) per token across layers.
  int64_t elements_per_token() const { return 2 * num_layers * num_kv_heads * head_dim; }
};

// The layout of `model`'s cache: its layers, KV heads and head size, num_blocks blocks of
// block_size tokens.
inline KvCacheLayout kv_cache_layout(const ModelConfig& model, int64_t block_size,
                                     int64_t num_blocks) {
  return {model.num_layers, model.num_kv_heads, model.head_dim, block_size, num_blocks};
}

// A sequence's blocks, in order: token at position p lives in block table[p / block_size].
using BlockTable = std::vector<int32_t>;

// The cache slot of position `position`: table[p / block_size] · block_size + p % block_size.
inline int64_t kv_slot(std::span<const int32_t> table, int64_t block_size, int64_t position) {
  return int64_t{table[static_cast<size_t>(position / block_size)]} * block_size +
         position % block_size;
}
// Slots of positions [start, start + count): where a forward pass writes new keys and values.
std::vector<int64_t> slot_mapping(std::span<const int32_t> table, int64_t block_size, int64_t start,
                                  int64_t count);

// Hands out blocks of the pool (the most recently freed first; lowest ids at the start). No prefix
// sharing here: that belongs to the scheduler's block manager, which fills the same block tables.
class BlockAllocator {
 public:
  explicit BlockAllocator(int64_t num_blocks);
  int64_t free_blocks() const { return static_cast<int64_t>(free_.size()); }
  // Grows `table` to cover `tokens` tokens. False (and no change) when the pool runs out.
  bool grow(BlockTable& table, int64_t tokens, int64_t block_size);
  // Gives back every block of `table` and clears it.
  void release(BlockTable& table);

 private:
  std::vector<int32_t> free_;  // a stack of free ids (lowest on top until blocks come back)
};

// The CPU backend's storage: fp32, [layer][slot][kv_head][head_dim] for keys and for values.
class CpuKvCache {
 public:
  explicit CpuKvCache(const KvCacheLayout& layout);
  const KvCacheLayout& layout() const { return layout_; }
  float* key(int64_t layer, int64_t slot) { return keys_.data() + offset(layer, slot); }
  float* value(int64_t layer, int64_t slot) { return values_.data() + offset(layer, slot); }
  const float* key(int64_t layer, int64_t slot) const { return keys_.data() + offset(layer, slot); }
  const float* value(int64_t layer, int64_t slot) const {
    return values_.data() + offset(layer, slot);
  }
  // Every key and value uniform in [-1, 1), drawn from `seed`.
  void fill_random(uint64_t seed);
  // Bytes of one block's keys and values over every layer, and the copies of blocks to and from
  // such bytes, block after block (the Backend's swap to host memory).
  int64_t block_bytes() const;
  std::vector<std::byte> copy_blocks_out(std::span<const int32_t> blocks) const;
  void copy_blocks_in(std::span<const int32_t> blocks, std::span<const std::byte> host);

 private:
  size_t offset(int64_t layer, int64_t slot) const {
    return static_cast<size_t>((layer * layout_.slots() + slot) * layout_.num_kv_heads *
                               layout_.head_dim);
  }
  KvCacheLayout layout_;
  std::vector<float> keys_, values_;
};

}  // namespace inferlab::engine
