#include "engine/kv_cache.hpp"

#include <cstring>
#include <stdexcept>

#include "util/rng.hpp"

namespace inferlab::engine {

std::vector<int64_t> slot_mapping(std::span<const int32_t> table, int64_t block_size, int64_t start,
                                  int64_t count) {
  if (start < 0 || count < 0 || start + count > static_cast<int64_t>(table.size()) * block_size) {
    throw std::invalid_argument("slot_mapping: the block table does not cover the positions");
  }
  std::vector<int64_t> slots(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    slots[static_cast<size_t>(i)] = kv_slot(table, block_size, start + i);
  return slots;
}

BlockAllocator::BlockAllocator(int64_t num_blocks) {
  if (num_blocks < 0 || num_blocks > (int64_t{1} << 31) - 1) {
    throw std::invalid_argument("BlockAllocator: bad block count");
  }
  for (int64_t id = num_blocks - 1; id >= 0; --id) free_.push_back(static_cast<int32_t>(id));
}

bool BlockAllocator::grow(BlockTable& table, int64_t tokens, int64_t block_size) {
  const int64_t needed =
      (tokens + block_size - 1) / block_size - static_cast<int64_t>(table.size());
  if (needed <= 0) return true;
  if (needed > free_blocks()) return false;
  for (int64_t i = 0; i < needed; ++i) {
    table.push_back(free_.back());
    free_.pop_back();
  }
  return true;
}

void BlockAllocator::release(BlockTable& table) {
  for (auto it = table.rbegin(); it != table.rend(); ++it) free_.push_back(*it);
  table.clear();
}

void CpuKvCache::fill_random(uint64_t seed) {
  Xoshiro256 rng(seed);
  for (auto* values : {&keys_, &values_}) {
    for (float& v : *values) v = static_cast<float>(rng.next() >> 40) / (1 << 23) - 1.0f;
  }
}

CpuKvCache::CpuKvCache(const KvCacheLayout& layout) : layout_(layout) {
  if (layout.num_layers < 1 || layout.num_kv_heads < 1 || layout.head_dim < 1 ||
      layout.block_size < 1 || layout.num_blocks < 1) {
    throw std::invalid_argument("CpuKvCache: every dimension of the layout must be positive");
  }
  const size_t elements = static_cast<size_t>(layout.num_layers * layout.slots() *
                                              layout.num_kv_heads * layout.head_dim);
  keys_.assign(elements, 0.0f);
  values_.assign(elements, 0.0f);
}

int64_t CpuKvCache::block_bytes() const {
  return 2 * layout_.num_layers * layout_.block_size * layout_.num_kv_heads * layout_.head_dim *
         static_cast<int64_t>(sizeof(float));
}

std::vector<std::byte> CpuKvCache::copy_blocks_out(std::span<const int32_t> blocks) const {
  // A block's slots are contiguous within a layer: one run of keys and one of values per layer.
  const size_t run = static_cast<size_t>(block_bytes() / (2 * layout_.num_layers));
  std::vector<std::byte> host(blocks.size() * static_cast<size_t>(block_bytes()));
  std::byte* at = host.data();
  for (const int32_t block : blocks) {
    const int64_t slot = int64_t{block} * layout_.block_size;
    for (int64_t layer = 0; layer < layout_.num_layers; ++layer) {
      std::memcpy(at, key(layer, slot), run);
      std::memcpy(at + run, value(layer, slot), run);
      at += 2 * run;
    }
  }
  return host;
}

void CpuKvCache::copy_blocks_in(std::span<const int32_t> blocks, std::span<const std::byte> host) {
  const size_t run = static_cast<size_t>(block_bytes() / (2 * layout_.num_layers));
  const std::byte* at = host.data();
  for (const int32_t block : blocks) {
    const int64_t slot = int64_t{block} * layout_.block_size;
    for (int64_t layer = 0; layer < layout_.num_layers; ++layer) {
      std::memcpy(key(layer, slot), at, run);
      std::memcpy(value(layer, slot), at + run, run);
      at += 2 * run;
    }
  }
}

}  // namespace inferlab::engine
