#pragma once
// The collectives of a tensor-parallel group of GPUs in one process, one rank per GPU, each
// called from the thread that drives its GPU (engine/cuda/tp_cuda_backend.hpp). An all-reduce
// of a few bytes (a decode step's 16 KB) takes the one-shot kernel over NVLink (tp_kernels.hpp)
// when every pair of GPUs has peer access, a middling one the two-shot kernel where enabled;
// larger ones and the LM head's all-gather take NCCL.
// Both are captured into CUDA graphs like any other launch. C++17 (the backend includes it).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace inferlab::engine::cuda {

struct GroupState;  // the NCCL communicators and peer buffers every rank shares

class RankCollectives {
 public:
  RankCollectives(std::shared_ptr<GroupState> group, int rank);
  int rank() const { return rank_; }
  int ranks() const;
  // data (count bf16 on this rank's GPU) becomes the sum over the ranks.
  void all_reduce_sum(__nv_bfloat16* data, int64_t count, cudaStream_t stream);
  // gathered = every rank's `local` (count floats each) in rank order.
  void all_gather(const float* local, float* gathered, int64_t count, cudaStream_t stream);
  // Whether an all-reduce of `bytes` takes the one-shot kernel, or the two-shot one.
  bool one_shot_for(int64_t bytes) const;
  bool two_shot_for(int64_t bytes) const;
  // Aborts every communicator of the group, so that ranks blocked in a collective return with an
  // error instead of waiting for a rank that failed; the group is unusable afterwards.
  void abort_group();
  // A rank of a group of processes (make_process_rank_collectives): its NCCL communicator, from
  // rank 0's unique id (nccl_unique_id's bytes), on the current GPU. Blocks until every rank has
  // called it.
  void connect(const std::vector<char>& unique_id);

 private:
  std::shared_ptr<GroupState> group_;
  int rank_;
};

// A group over GPUs 0 .. ranks-1: NCCL communicators (ncclCommInitAll) and, where every pair of
// GPUs has peer access, the peer kernels' buffers. All-reduces up to one_shot_max_bytes take the
// one-shot kernel, larger ones up to two_shot_max_bytes the two-shot kernel, the rest NCCL (0
// switches a kernel off). Throws InputError when this build has no NCCL or the GPUs are fewer
// than `ranks`.
std::vector<std::shared_ptr<RankCollectives>> make_rank_collectives(int ranks,
                                                                    int64_t one_shot_max_bytes,
                                                                    int64_t two_shot_max_bytes = 0);

// Tensor parallelism with a process per GPU (engine/cuda/tp_cuda_process.cpp): rank `rank` of
// `ranks`, NCCL for every collective (the one-shot kernel needs its peers' memory mapped into one
// process), its communicator made later by connect() (the backend's sizes need the group's size
// before then). InputError when this build has no NCCL.
std::shared_ptr<RankCollectives> make_process_rank_collectives(int rank, int ranks);
// A new NCCL unique id (rank 0's), as bytes to send to the other ranks.
std::vector<char> nccl_unique_id();

}  // namespace inferlab::engine::cuda
