#pragma once
// Tensor parallelism's kernels (C++17: included by .cu files):
//   - a one-shot all-reduce over the GPUs of one process: each rank stages its input in its own
//     memory, the ranks meet at a flag barrier over NVLink (peer access), and every rank reads
//     every rank's staging buffer, adds in rank order in fp32 and writes the sum: one kernel,
//     one round trip, where NCCL's ring takes 2 (N - 1) steps. For small messages (a decode
//     step's 16 KB) latency is all there is to an all-reduce, and this is the smallest.
//   - a two-shot all-reduce over the same memory for larger messages: each rank sums its Nth of
//     the message from every rank's staging buffer (reduce-scatter), the ranks meet again, and
//     each gathers the other Nths (all-gather). Two barriers instead of one, but each rank reads
//     2 (N - 1) / N of the message over NVLink where the one-shot reads N - 1 times all of it.
//   - the vocab-parallel LM head's logits put back in vocabulary order after the all-gather.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace inferlab::engine::cuda {

constexpr int kMaxPeerRanks = 8;
// Blocks of the one-shot kernel at most (a decode step's 16 KB takes 2), and of either kernel.
constexpr int kOneShotMaxBlocks = 16;
constexpr int kMaxAllReduceBlocks = 32;

// One rank's view of the group's peer memory (every pointer reachable from this rank's GPU).
struct PeerAllReduceView {
  int rank = 0, ranks = 1;
  // staging[b][r]: rank r's staging buffer b (two, used on alternate calls), capacity elements.
  __nv_bfloat16* staging[2][kMaxPeerRanks] = {};
  // flags[r]: rank r's arrival flags, [2][kMaxAllReduceBlocks][kMaxPeerRanks] (barrier: the
  // staged inputs, then the two-shot's reduced parts; block; sender).
  uint32_t* flags[kMaxPeerRanks] = {};
  // This rank's call counter and count of finished blocks (2 words of its own memory).
  uint32_t* counters = nullptr;
  int64_t capacity = 0;  // bf16 elements per staging buffer
};

// data (count bf16 elements, count % 8 == 0, count <= capacity, the same on every rank) becomes
// the sum over the ranks, the same bits on each. Every rank must make the same calls in the same
// order. A peer that does not arrive within ~10 s traps (an error, not a hang).
void one_shot_all_reduce(const PeerAllReduceView& view, __nv_bfloat16* data, int64_t count,
                         cudaStream_t stream);

// The same contract by the two-shot form (count % (8 · ranks) need not be 0: the last parts are
// shorter). The one-shot and two-shot kernels share the call counter and may alternate.
void two_shot_all_reduce(const PeerAllReduceView& view, __nv_bfloat16* data, int64_t count,
                         cudaStream_t stream);

// Words of a rank's flag buffer: both barriers' flags, then the call counter and finished blocks.
constexpr int64_t kAllReduceFlagWords = 2 * kMaxAllReduceBlocks * kMaxPeerRanks + 2;

// gathered [ranks][rows][padded] (each rank's logits of its vocab rows, padded to `padded`
// columns) → logits [rows][vocab], rank r holding the rows engine::shard_rows(vocab, r, ranks)
// gives (the first vocab % ranks ranks one more).
void unshard_vocab_logits(const float* gathered, int rows, int vocab, int ranks, int padded,
                          float* logits, cudaStream_t stream);

}  // namespace inferlab::engine::cuda
