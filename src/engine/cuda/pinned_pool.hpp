#pragma once
// Page-locked host buffers for the KV blocks a preemption by swap copies out: cudaHostAlloc pins
// every page it hands out (tens of ms for the tens of MB of a sequence's KV), so buffers are
// kept once allocated and handed out again, the smallest free one that holds the request and is
// at most twice its size. The pool grows to the most the swapped-out sequences held at once and
// gives its memory back when the last buffer and the pool itself are gone.
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <span>

#include "engine/backend.hpp"

namespace inferlab::engine::cuda {

class PinnedPool : public std::enable_shared_from_this<PinnedPool> {
 public:
  ~PinnedPool();
  // A buffer of `bytes` bytes (its capacity may be more), back in the pool when it is destroyed.
  std::unique_ptr<KvHostCopy> take(size_t bytes);
  size_t allocated_bytes() const;

 private:
  friend class PinnedCopy;
  void give_back(std::byte* data, size_t capacity);

  mutable std::mutex mutex_;
  std::multimap<size_t, std::byte*> free_;  // capacity -> buffer
  size_t allocated_bytes_ = 0;
};

// A KvHostCopy in a pinned buffer of the pool; data() is where the copy writes.
class PinnedCopy final : public KvHostCopy {
 public:
  PinnedCopy(std::shared_ptr<PinnedPool> pool, std::byte* data, size_t capacity, size_t bytes)
      : pool_(std::move(pool)), data_(data), capacity_(capacity), bytes_(bytes) {}
  ~PinnedCopy() override { pool_->give_back(data_, capacity_); }
  PinnedCopy(const PinnedCopy&) = delete;
  PinnedCopy& operator=(const PinnedCopy&) = delete;
  std::span<const std::byte> bytes() const override { return {data_, bytes_}; }
  std::byte* data() { return data_; }

 private:
  std::shared_ptr<PinnedPool> pool_;
  std::byte* data_;
  size_t capacity_, bytes_;
};

}  // namespace inferlab::engine::cuda
