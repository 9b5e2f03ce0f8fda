#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>

#include "engine/backend.hpp"

namespace inferlab::engine {

// The host copies of swapped-out sequences' KV blocks (preemption by swap) for one backend: the
// serving executor keeps the target's, the batch drafter the draft model's.
class KvSwapSpace {
 public:
  explicit KvSwapSpace(Backend& backend) : backend_(backend) {}
  // Copies `seq`'s blocks to host memory.
  void swap_out(int64_t seq, std::span<const int32_t> blocks) {
    copies_[seq] = backend_.copy_kv_blocks_to_host(blocks);
  }
  // Copies `seq`'s KV back into `blocks` and lets the host copy go; false (and nothing copied)
  // when `seq` has none here.
  bool swap_in(int64_t seq, std::span<const int32_t> blocks) {
    const auto kept = copies_.find(seq);
    if (kept == copies_.end()) return false;
    backend_.copy_kv_blocks_from_host(blocks, kept->second->bytes());
    copies_.erase(kept);
    return true;
  }
  // Drops a copy (a request that ended while swapped out).
  void forget(int64_t seq) { copies_.erase(seq); }

 private:
  Backend& backend_;
  std::unordered_map<int64_t, std::unique_ptr<KvHostCopy>> copies_;
};

}  // namespace inferlab::engine
