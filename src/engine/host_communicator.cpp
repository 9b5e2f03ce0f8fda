#include "engine/host_communicator.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace inferlab::engine {

HostCommunicator::HostCommunicator(int ranks)
    : ranks_(ranks),
      published_(static_cast<size_t>(std::max(ranks, 1)), nullptr),
      published_sizes_(static_cast<size_t>(std::max(ranks, 1)), 0),
      sums_(static_cast<size_t>(std::max(ranks, 1))) {
  if (ranks < 1) throw std::invalid_argument("HostCommunicator: ranks must be positive");
}

void HostCommunicator::sync() {
  std::unique_lock lock(mutex_);
  if (aborted_) throw std::runtime_error("tensor-parallel group aborted: another rank failed");
  const int64_t generation = generation_;
  if (++arrived_ == ranks_) {
    arrived_ = 0;
    ++generation_;
    arrived_all_.notify_all();
    return;
  }
  arrived_all_.wait(lock, [&] { return generation_ != generation || aborted_; });
  if (generation_ == generation) {
    throw std::runtime_error("tensor-parallel group aborted: another rank failed");
  }
}

void HostCommunicator::abort() {
  std::lock_guard lock(mutex_);
  aborted_ = true;
  arrived_all_.notify_all();
}

void HostCommunicator::reset() {
  std::lock_guard lock(mutex_);
  aborted_ = false;
  arrived_ = 0;
}

void HostCommunicator::all_reduce_sum(int rank, std::span<float> data) {
  const auto r = static_cast<size_t>(rank);
  // Sized before the barrier: nothing between the two barriers may throw, or this rank would
  // unwind (freeing `data`) while the others still read it.
  auto& sum = sums_[r];
  sum.resize(data.size());
  published_[r] = data.data();
  published_sizes_[r] = data.size();
  sync();  // every rank's partial sums are published
  for (int other = 0; other < ranks_; ++other) {
    if (published_sizes_[static_cast<size_t>(other)] != data.size()) {
      abort();
      throw std::invalid_argument("all_reduce_sum: the ranks' buffers differ in length");
    }
  }
  std::copy_n(published_[0], data.size(), sum.begin());
  for (int other = 1; other < ranks_; ++other) {
    const float* values = published_[static_cast<size_t>(other)];
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += values[i];
  }
  sync();  // nobody reads the published buffers any more
  std::copy(sum.begin(), sum.end(), data.begin());
}

void HostCommunicator::all_gather(int rank, std::span<const float> local, std::span<float> out) {
  const auto r = static_cast<size_t>(rank);
  published_[r] = local.data();
  published_sizes_[r] = local.size();
  sync();
  size_t total = 0;
  for (size_t size : published_sizes_) total += size;
  if (total != out.size()) {
    abort();
    throw std::invalid_argument("all_gather: the output does not hold every rank's part");
  }
  size_t offset = 0;
  for (int other = 0; other < ranks_; ++other) {
    const size_t size = published_sizes_[static_cast<size_t>(other)];
    std::copy_n(published_[static_cast<size_t>(other)], size, out.begin() + offset);
    offset += size;
  }
  sync();
}

}  // namespace inferlab::engine
