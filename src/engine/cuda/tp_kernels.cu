#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/tp_kernels.hpp"

namespace inferlab::engine::cuda {

namespace {

__device__ __forceinline__ void store_release_system(uint32_t* at, uint32_t value) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(at), "r"(value) : "memory");
}

__device__ __forceinline__ uint32_t load_acquire_system(const uint32_t* at) {
  uint32_t value;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(value) : "l"(at) : "memory");
  return value;
}

// Eight bf16 per 16-byte vector.
__device__ __forceinline__ void add_bf16x8(float* sum, uint4 v) {
  const auto* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(h[i]);
    sum[2 * i] += f.x;
    sum[2 * i + 1] += f.y;
  }
}

// Threads 0..ranks-1 of a block tell each peer that this block (and every rank's block of the
// same index) has reached `barrier` (0 or 1) of call `epoch`, then wait for the peers' word.
__device__ __forceinline__ void meet_peers(const PeerAllReduceView& view, int barrier,
                                           uint32_t epoch) {
  if (threadIdx.x < view.ranks) {
    const int peer = threadIdx.x;
    const int64_t at =
        (static_cast<int64_t>(barrier) * kMaxAllReduceBlocks + blockIdx.x) * kMaxPeerRanks;
    store_release_system(view.flags[peer] + at + view.rank, epoch);
    const uint32_t* arrived = view.flags[view.rank] + at + peer;
    const long long start = clock64();
    while (load_acquire_system(arrived) < epoch) {
      if (clock64() - start > (1ll << 34)) __trap();  // ~10 s: a peer is gone
    }
  }
  __syncthreads();
}

// The call's number, read by every block before any block can finish (the last block to finish
// advances it: finish_call), so the whole grid agrees on it.
__device__ __forceinline__ uint32_t begin_call(const PeerAllReduceView& view) {
  __shared__ uint32_t call;
  if (threadIdx.x == 0) call = *reinterpret_cast<volatile uint32_t*>(view.counters) + 1;
  __syncthreads();
  return call;
}

__device__ __forceinline__ void finish_call(const PeerAllReduceView& view, uint32_t epoch) {
  __syncthreads();
  if (threadIdx.x == 0) {
    if (atomicAdd(view.counters + 1, 1u) == gridDim.x - 1) {
      view.counters[1] = 0;
      __threadfence();
      view.counters[0] = epoch;
    }
  }
}

// Σ over the ranks of vector i of staging buffer `buffer`, added in rank order in fp32.
__device__ __forceinline__ uint4 sum_over_ranks(const PeerAllReduceView& view, int buffer,
                                                int64_t i) {
  float sum[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int r = 0; r < view.ranks; ++r) {
    add_bf16x8(sum, __ldcv(reinterpret_cast<const uint4*>(view.staging[buffer][r]) + i));
  }
  uint4 out;
  auto* h = reinterpret_cast<__nv_bfloat162*>(&out);
#pragma unroll
  for (int k = 0; k < 4; ++k) h[k] = __floats2bfloat162_rn(sum[2 * k], sum[2 * k + 1]);
  return out;
}

__global__ void two_shot_all_reduce_kernel(PeerAllReduceView view, __nv_bfloat16* data,
                                           int64_t vectors) {
  const uint32_t epoch = begin_call(view);
  const int buffer = static_cast<int>(epoch & 1u);
  const int64_t per_block = (vectors + gridDim.x - 1) / gridDim.x;
  const int64_t begin = blockIdx.x * per_block;
  const int64_t end = begin + per_block < vectors ? begin + per_block : vectors;
  // Rank r reduces part r of this block's range; the parts' bounds are the same on every rank.
  const int64_t part = (end - begin + view.ranks - 1) / view.ranks;
  auto part_begin = [&](int r) { return begin + part * r < end ? begin + part * r : end; };
  auto* mine = reinterpret_cast<uint4*>(view.staging[buffer][view.rank]);
  const auto* input = reinterpret_cast<const uint4*>(data);
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) mine[i] = input[i];
  __threadfence_system();
  __syncthreads();
  meet_peers(view, 0, epoch);
  // Reduce-scatter: this rank's part, summed in rank order, written over its own staged part
  // (no peer reads that part of this rank's buffer before the second barrier).
  for (int64_t i = part_begin(view.rank) + threadIdx.x; i < part_begin(view.rank + 1);
       i += blockDim.x) {
    mine[i] = sum_over_ranks(view, buffer, i);
  }
  __threadfence_system();
  __syncthreads();
  meet_peers(view, 1, epoch);
  // All-gather: part r from rank r's buffer.
  for (int r = 0; r < view.ranks; ++r) {
    const auto* theirs = reinterpret_cast<const uint4*>(view.staging[buffer][r]);
    for (int64_t i = part_begin(r) + threadIdx.x; i < part_begin(r + 1); i += blockDim.x) {
      reinterpret_cast<uint4*>(data)[i] = __ldcv(theirs + i);
    }
  }
  finish_call(view, epoch);
}

__global__ void one_shot_all_reduce_kernel(PeerAllReduceView view, __nv_bfloat16* data,
                                           int64_t vectors) {
  const uint32_t epoch = begin_call(view);
  const int buffer = static_cast<int>(epoch & 1u);
  const int64_t per_block = (vectors + gridDim.x - 1) / gridDim.x;
  const int64_t begin = blockIdx.x * per_block;
  const int64_t end = begin + per_block < vectors ? begin + per_block : vectors;
  auto* mine = reinterpret_cast<uint4*>(view.staging[buffer][view.rank]);
  const auto* input = reinterpret_cast<const uint4*>(data);
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) mine[i] = input[i];
  // The staged slice is visible to the peers before they are told it is there.
  __threadfence_system();
  __syncthreads();
  meet_peers(view, 0, epoch);
  // Every rank adds in rank order 0, 1, ..., N-1: the same bits everywhere.
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    reinterpret_cast<uint4*>(data)[i] = sum_over_ranks(view, buffer, i);
  }
  finish_call(view, epoch);
}

__global__ void unshard_vocab_logits_kernel(const float* gathered, int rows, int vocab, int ranks,
                                            int padded, float* logits) {
  const int base = vocab / ranks, extra = vocab % ranks;
  const int64_t total = static_cast<int64_t>(rows) * vocab;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int row = static_cast<int>(i / vocab), v = static_cast<int>(i % vocab);
    const int wide = extra * (base + 1);  // the first `extra` ranks hold base + 1 rows
    const int r = v < wide ? v / (base + 1) : extra + (v - wide) / base;
    const int first = r < extra ? r * (base + 1) : wide + (r - extra) * base;
    logits[i] = gathered[(static_cast<int64_t>(r) * rows + row) * padded + (v - first)];
  }
}

// Blocks of an all-reduce of `vectors` 16-byte vectors: one per `per_block`, 1 to `most`.
int all_reduce_blocks(int64_t vectors, int64_t per_block, int most) {
  return static_cast<int>(
      std::min<int64_t>(most, std::max<int64_t>(1, (vectors + per_block - 1) / per_block)));
}

}  // namespace

void one_shot_all_reduce(const PeerAllReduceView& view, __nv_bfloat16* data, int64_t count,
                         cudaStream_t stream) {
  const int64_t vectors = count / 8;
  // A block per 512 vectors (8 KB): a decode step's 16 KB takes 2.
  const int blocks = all_reduce_blocks(vectors, 512, kOneShotMaxBlocks);
  one_shot_all_reduce_kernel<<<blocks, 512, 0, stream>>>(view, data, vectors);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void two_shot_all_reduce(const PeerAllReduceView& view, __nv_bfloat16* data, int64_t count,
                         cudaStream_t stream) {
  const int64_t vectors = count / 8;
  // A block per 1024 vectors (16 KB): each rank's part of a block's range is then at least 2
  // vectors per thread at 4 ranks for the larger messages.
  const int blocks = all_reduce_blocks(vectors, 1024, kMaxAllReduceBlocks);
  two_shot_all_reduce_kernel<<<blocks, 512, 0, stream>>>(view, data, vectors);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void unshard_vocab_logits(const float* gathered, int rows, int vocab, int ranks, int padded,
                          float* logits, cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(rows) * vocab;
  const int blocks = static_cast<int>(std::min<int64_t>((total + 255) / 256, 4096));
  unshard_vocab_logits_kernel<<<blocks, 256, 0, stream>>>(gathered, rows, vocab, ranks, padded,
                                                          logits);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace inferlab::engine::cuda
