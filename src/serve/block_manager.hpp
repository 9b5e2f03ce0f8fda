#pragma once
#include <cstdint>
#include <list>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace inferlab {

// A paged KV cache (vLLM's block manager): `total_blocks` blocks of `block_size` tokens. A
// sequence holds a list of blocks. With prefix caching, a full prompt block is identified by its
// key (serve/block_keys: a hash chain over the tokens up to its end): a second sequence whose
// prompt has the same leading keys shares those blocks (reference counted), and a block nobody
// holds stays cached, evictable least recently freed first, until its space is needed.
class BlockManager {
 public:
  BlockManager(int64_t total_blocks, int64_t block_size, bool prefix_caching);

  int64_t block_size() const { return block_size_; }
  int64_t total_blocks() const { return total_; }
  int64_t free_blocks() const;  // never-used plus evictable cached blocks
  int64_t used_blocks() const { return total_ - free_blocks(); }
  int64_t blocks_for(int64_t tokens) const { return (tokens + block_size_ - 1) / block_size_; }

  // How many of the leading `keys` are cached (0 without prefix caching).
  int64_t cached_prefix_blocks(std::span<const uint64_t> keys) const;
  // Takes the cached leading blocks for a new sequence (refcount + 1). Returns how many.
  int64_t acquire_prefix(int64_t seq, std::span<const uint64_t> keys);
  // Grows a sequence to hold `tokens` tokens. False (and no change) when blocks run out.
  bool grow(int64_t seq, int64_t tokens);
  // After a step: the sequence's first `computed_tokens` tokens are in the cache, so its full
  // keyed blocks among them (keys[i] is block i's) become hits for later sequences.
  void mark_computed(int64_t seq, int64_t computed_tokens, std::span<const uint64_t> keys);
  int64_t held_blocks(int64_t seq) const;
  // A sequence's blocks in position order (empty when it holds none): its block table.
  const std::vector<int64_t>& blocks_of(int64_t seq) const;
  // Gives a sequence's blocks back: shared-prefix blocks stay cached while free.
  void release(int64_t seq);

  int64_t evictions() const { return evictions_; }

  // "" when the bookkeeping holds together, else what is wrong: every block exactly one of
  // held (refs = the number of sequences holding it, none twice), evictable (cached, no holder)
  // or never used; the prefix cache and the blocks' keys agree. For stress tests.
  std::string consistency_error() const;

 private:
  struct Block {
    int64_t refs = 0;
    bool keyed = false;  // in the prefix cache under `key`
    uint64_t key = 0;
  };
  int64_t take_block();  // a never-used block, else the oldest evictable cached one; -1: none

  int64_t total_, block_size_;
  bool prefix_caching_;
  std::vector<Block> blocks_;
  std::vector<int64_t> never_used_;
  std::list<int64_t> evictable_;  // cached blocks with no holder, oldest first
  std::unordered_map<int64_t, std::list<int64_t>::iterator> evictable_pos_;
  std::unordered_map<uint64_t, int64_t> cache_;  // key -> block
  std::unordered_map<int64_t, std::vector<int64_t>> seq_blocks_;
  std::unordered_map<int64_t, int64_t> seq_computed_;  // tokens registered so far
  int64_t evictions_ = 0;
};

}  // namespace inferlab
