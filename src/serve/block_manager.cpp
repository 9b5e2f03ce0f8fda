#include "serve/block_manager.hpp"

#include <algorithm>
#include <unordered_set>

namespace inferlab {

BlockManager::BlockManager(int64_t total_blocks, int64_t block_size, bool prefix_caching)
    : total_(total_blocks), block_size_(block_size), prefix_caching_(prefix_caching) {
  blocks_.resize(static_cast<size_t>(total_));
  never_used_.reserve(static_cast<size_t>(total_));
  for (int64_t b = total_ - 1; b >= 0; --b) never_used_.push_back(b);
}

int64_t BlockManager::free_blocks() const {
  return static_cast<int64_t>(never_used_.size() + evictable_.size());
}

int64_t BlockManager::cached_prefix_blocks(std::span<const uint64_t> keys) const {
  if (!prefix_caching_) return 0;
  int64_t hits = 0;
  while (hits < static_cast<int64_t>(keys.size()) && cache_.count(keys[static_cast<size_t>(hits)]))
    ++hits;
  return hits;
}

int64_t BlockManager::acquire_prefix(int64_t seq, std::span<const uint64_t> keys) {
  const int64_t hits = cached_prefix_blocks(keys);
  auto& held = seq_blocks_[seq];
  for (int64_t i = 0; i < hits; ++i) {
    const int64_t b = cache_.at(keys[static_cast<size_t>(i)]);
    if (blocks_[b].refs == 0) {
      evictable_.erase(evictable_pos_.at(b));
      evictable_pos_.erase(b);
    }
    ++blocks_[b].refs;
    held.push_back(b);
  }
  seq_computed_[seq] = hits * block_size_;
  return hits;
}

int64_t BlockManager::take_block() {
  if (!never_used_.empty()) {
    const int64_t b = never_used_.back();
    never_used_.pop_back();
    return b;
  }
  if (evictable_.empty()) return -1;
  const int64_t b = evictable_.front();
  evictable_.pop_front();
  evictable_pos_.erase(b);
  cache_.erase(blocks_[b].key);
  blocks_[b].keyed = false;
  ++evictions_;
  return b;
}

bool BlockManager::grow(int64_t seq, int64_t tokens) {
  auto& held = seq_blocks_[seq];
  const int64_t needed = blocks_for(tokens) - static_cast<int64_t>(held.size());
  if (needed > free_blocks()) return false;
  for (int64_t i = 0; i < needed; ++i) {
    const int64_t b = take_block();
    blocks_[b].refs = 1;
    held.push_back(b);
  }
  return true;
}

void BlockManager::mark_computed(int64_t seq, int64_t computed_tokens,
                                 std::span<const uint64_t> keys) {
  int64_t& done = seq_computed_[seq];
  if (prefix_caching_ && !keys.empty()) {
    const auto& held = seq_blocks_[seq];
    const int64_t full = std::min({static_cast<int64_t>(keys.size()), computed_tokens / block_size_,
                                   static_cast<int64_t>(held.size())});
    for (int64_t i = done / block_size_; i < full; ++i) {
      const uint64_t key = keys[static_cast<size_t>(i)];
      const int64_t b = held[static_cast<size_t>(i)];
      if (!cache_.count(key) && !blocks_[b].keyed) {
        cache_[key] = b;
        blocks_[b].key = key;
        blocks_[b].keyed = true;
      }
    }
  }
  done = std::max(done, computed_tokens);
}

const std::vector<int64_t>& BlockManager::blocks_of(int64_t seq) const {
  static const std::vector<int64_t> kNone;
  auto it = seq_blocks_.find(seq);
  return it == seq_blocks_.end() ? kNone : it->second;
}

int64_t BlockManager::held_blocks(int64_t seq) const {
  auto it = seq_blocks_.find(seq);
  return it == seq_blocks_.end() ? 0 : static_cast<int64_t>(it->second.size());
}

void BlockManager::release(int64_t seq) {
  auto it = seq_blocks_.find(seq);
  if (it == seq_blocks_.end()) return;
  for (int64_t b : it->second) {
    if (--blocks_[b].refs > 0) continue;
    if (blocks_[b].keyed) {
      evictable_.push_back(b);
      evictable_pos_[b] = std::prev(evictable_.end());
    } else {
      never_used_.push_back(b);
    }
  }
  seq_blocks_.erase(it);
  seq_computed_.erase(seq);
}

std::string BlockManager::consistency_error() const {
  const auto where = [](const char* what, int64_t block) {
    return std::string(what) + " (block " + std::to_string(block) + ")";
  };
  std::vector<int64_t> holders(blocks_.size(), 0);
  for (const auto& [seq, held] : seq_blocks_) {
    std::unordered_set<int64_t> seen;
    for (int64_t b : held) {
      if (b < 0 || b >= total_) return where("a sequence holds a block outside the pool", b);
      if (!seen.insert(b).second) return where("a sequence holds a block twice", b);
      ++holders[static_cast<size_t>(b)];
    }
  }
  std::vector<int> places(blocks_.size(), 0);
  for (int64_t b : never_used_) ++places[static_cast<size_t>(b)];
  for (int64_t b : evictable_) ++places[static_cast<size_t>(b)];
  if (evictable_pos_.size() != evictable_.size()) return "the evictable index is out of step";
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const auto b = static_cast<int64_t>(i);
    const Block& block = blocks_[i];
    if (block.refs != holders[i]) return where("reference count differs from its holders", b);
    if (block.refs > 0 && places[i] != 0) return where("a held block is also free", b);
    if (block.refs == 0 && places[i] != 1) return where("a free block is not free exactly once", b);
    if (block.keyed) {
      auto it = cache_.find(block.key);
      if (it == cache_.end() || it->second != b) return where("a keyed block is not cached", b);
    }
  }
  for (int64_t b : never_used_) {
    if (blocks_[static_cast<size_t>(b)].keyed) return where("a never-used block has a key", b);
  }
  for (int64_t b : evictable_) {
    if (!blocks_[static_cast<size_t>(b)].keyed) return where("an evictable block has no key", b);
  }
  for (const auto& [key, b] : cache_) {
    if (!blocks_[static_cast<size_t>(b)].keyed || blocks_[static_cast<size_t>(b)].key != key)
      return where("the cache names a block by another key", b);
  }
  return "";
}

}  // namespace inferlab
