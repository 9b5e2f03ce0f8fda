#pragma once
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "engine/host_collectives.hpp"

namespace inferlab::engine {

// The collectives of a tensor-parallel group whose ranks are threads of one process, in host
// memory: what NCCL does between GPUs, for the CPU reference (HostCollectives' contract). Every
// rank calls each collective in the same order (as with NCCL); a call returns once every rank has
// made it.
//
// The all-reduce adds the ranks' buffers in rank order 0, 1, ..., N-1 on every rank, so all
// ranks hold the same bits afterwards (a ring all-reduce adds in a different order per chunk;
// the difference from the single-device result is rounding either way).
//
// A rank that fails calls abort(): the others' pending and later calls throw instead of waiting
// for it forever; reset() readies the group for the next forward pass.
class HostCommunicator final : public HostCollectives {
 public:
  explicit HostCommunicator(int ranks);
  int ranks() const { return ranks_; }

  // data (the same length on every rank) becomes the element-wise sum over the ranks.
  void all_reduce_sum(int rank, std::span<float> data) override;
  // out = every rank's `local` concatenated in rank order (lengths may differ by rank; out must
  // hold their sum).
  void all_gather(int rank, std::span<const float> local, std::span<float> out) override;

  void abort();
  void reset();

 private:
  // Blocks until all ranks arrive (a reusable barrier); throws once the group is aborted.
  void sync();

  int ranks_;
  std::mutex mutex_;
  std::condition_variable arrived_all_;
  int arrived_ = 0;
  int64_t generation_ = 0;
  bool aborted_ = false;
  std::vector<const float*> published_;
  std::vector<size_t> published_sizes_;
  std::vector<std::vector<float>> sums_;  // one per rank: its result before it is copied back
};

}  // namespace inferlab::engine
