#include "engine/cuda/pinned_pool.hpp"

#include "engine/cuda/cuda_check.hpp"

namespace inferlab::engine::cuda {

namespace {
constexpr size_t kGrain = size_t{2} << 20;  // capacities in 2 MiB steps, so that sizes repeat
}  // namespace

PinnedPool::~PinnedPool() {
  for (auto& [capacity, data] : free_) cudaFreeHost(data);
}

std::unique_ptr<KvHostCopy> PinnedPool::take(size_t bytes) {
  std::byte* data = nullptr;
  size_t capacity = 0;
  {
    std::lock_guard lock(mutex_);
    auto it = free_.lower_bound(bytes);
    if (it != free_.end() && it->first <= 2 * std::max(bytes, kGrain)) {
      capacity = it->first;
      data = it->second;
      free_.erase(it);
    }
  }
  if (data == nullptr) {
    capacity = std::max<size_t>(kGrain, (bytes + kGrain - 1) / kGrain * kGrain);
    void* pinned = nullptr;
    INFERLAB_CUDA_CHECK(cudaHostAlloc(&pinned, capacity, cudaHostAllocDefault));
    data = static_cast<std::byte*>(pinned);
    std::lock_guard lock(mutex_);
    allocated_bytes_ += capacity;
  }
  return std::make_unique<PinnedCopy>(shared_from_this(), data, capacity, bytes);
}

size_t PinnedPool::allocated_bytes() const {
  std::lock_guard lock(mutex_);
  return allocated_bytes_;
}

void PinnedPool::give_back(std::byte* data, size_t capacity) {
  std::lock_guard lock(mutex_);
  free_.emplace(capacity, data);
}

}  // namespace inferlab::engine::cuda
