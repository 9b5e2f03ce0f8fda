// The unfused attention baseline (`naive` in PagedAttentionParams): what an implementation
// without FlashAttention runs, three kernels with the scores materialized in device memory.
//   1. scores: S[t, h, j] = (q_t,h · k_j) · softmax_scale for every position j that query token t
//      sees (causal, within the sliding window), fp32, log2 domain; one CTA per (query head, tile
//      of kKeyTile positions, token), heads fastest so that the CTAs of a KV head's query heads
//      run together and share its keys through L2.
//   2. softmax: each (t, h) row over its visible positions, in place (max, exp2 and sum, scale).
//   3. P·V: out[t, h] = Σ_j P[t, h, j] v_j; one CTA per (query head, token).
// Decode, prefill and mixed batches take the same kernels: each token finds its sequence by a
// binary search over query_start. The workspace holds score rows for a chunk of tokens
// (workspace_bytes / naive_token_bytes of them, rows as long as the longest context); the
// launcher walks the batch in such chunks, so a bounded workspace serves any batch. Loads are
// 16 bytes of bf16 (8 of int8/fp8) per thread, consecutive threads along a row; keys and values
// are re-read per query token (and per query head, from L2), as the unfused form does. The
// sums have a fixed order: two runs give the same bits.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "engine/cuda/attention_device.cuh"
#include "engine/cuda/attention_kernels.hpp"
#include "engine/cuda/cuda_check.hpp"

namespace inferlab::engine::cuda::detail {
namespace {

constexpr int kScoreThreads = 128;
constexpr int kKeyTile = 128;    // positions scored per CTA
constexpr int kScoreUnroll = 4;  // key rows each thread has in flight
constexpr int kSoftmaxThreads = 256;
constexpr int kPvThreads = 256;
constexpr int kPvUnroll = 8;  // value rows each thread has in flight (a CTA walks a whole row)
constexpr int kMaxGridY = 65535;
constexpr float kLog2e = 1.4426950408889634f;

struct NaiveArgs {
  PagedAttentionParams p;
  int first_token;  // the chunk's first token; blockIdx.z = token - first_token
  int row_stride;   // floats per (token, head) score row
  float* scores;    // [chunk tokens][num_heads][row_stride]
};

// Where query token `token` stands: its sequence, its position and the first position it sees.
struct QueryPlace {
  int seq;
  int position;
  int first;
};

__device__ QueryPlace place_of(const PagedAttentionParams& p, int token) {
  // The last sequence whose start is at or before the token (sequences without new tokens share
  // their start with the next one, which is the one that holds it).
  int lo = 0, hi = p.num_seqs - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (p.query_start[mid] <= token) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const int start = p.query_start[lo];
  const int query_len = p.query_start[lo + 1] - start;
  const int position = p.context_lens[lo] - query_len + (token - start);
  const int first = p.sliding_window > 0 ? max(0, position - p.sliding_window + 1) : 0;
  return {lo, position, first};
}

// (slot, kv head) index of position j of sequence seq.
__device__ __forceinline__ int64_t cache_vector(const PagedAttentionParams& p, int seq, int j,
                                                int kv_head) {
  const int32_t block =
      p.block_tables[static_cast<int64_t>(seq) * p.block_table_stride + j / p.block_size];
  return (static_cast<int64_t>(block) * p.block_size + j % p.block_size) * p.num_kv_heads + kv_head;
}

template <int D, DType F>
__global__ void __launch_bounds__(kScoreThreads) scores_kernel(const NaiveArgs a) {
  using Fmt = KvFormat<F>;
  constexpr int kLanes = D / 8;  // threads per key row, 8 elements each
  constexpr int kRows = kScoreThreads / kLanes;
  constexpr int kUnroll = kScoreUnroll;
  const PagedAttentionParams& p = a.p;
  const int head = blockIdx.x;
  const int token = a.first_token + static_cast<int>(blockIdx.z);
  const QueryPlace at = place_of(p, token);
  const int lo = max(static_cast<int>(blockIdx.y) * kKeyTile, at.first);
  const int hi = min(static_cast<int>(blockIdx.y + 1) * kKeyTile, at.position + 1);
  if (lo >= hi) return;
  const int kv_head = head / (p.num_heads / p.num_kv_heads);
  const int part = threadIdx.x % kLanes;
  const int row = threadIdx.x / kLanes;

  float q[8];
  KvFormat<DType::bf16>::to_float(
      load_raw8<DType::bf16>(p.q + static_cast<int64_t>(token) * p.q_row_stride +
                             static_cast<int64_t>(head) * D + part * 8),
      q);
  const float q_scale = p.softmax_scale * kLog2e;
#pragma unroll
  for (int i = 0; i < 8; ++i) q[i] *= q_scale;
  float* out = a.scores + (static_cast<int64_t>(blockIdx.z) * p.num_heads + head) * a.row_stride;
  const auto* cache = static_cast<const unsigned char*>(p.cache.k);

  for (int r0 = lo; r0 < hi; r0 += kRows * kUnroll) {  // uniform over the CTA (shuffles below)
    typename Fmt::Raw8 raw[kUnroll];
    int64_t vector[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int j = r0 + u * kRows + row;
      vector[u] = j < hi ? cache_vector(p, at.seq, j, kv_head) : 0;
      raw[u] = {};
      if (j < hi) raw[u] = load_raw8<F>(cache + (vector[u] * D + part * 8) * Fmt::kBytes);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int j = r0 + u * kRows + row;
      float k[8];
      Fmt::to_float(raw[u], k);
      float dot = 0.0f;
#pragma unroll
      for (int i = 0; i < 8; ++i) dot = fmaf(q[i], k[i], dot);
#pragma unroll
      for (int off = kLanes / 2; off > 0; off /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, off);
      if (part == 0 && j < hi) {
        if constexpr (Fmt::kQuantized) dot *= __ldg(p.cache.k_scale + vector[u]);
        out[j] = dot;
      }
    }
  }
}

// Max and sum over the block (kSoftmaxThreads threads); every thread gets the result.
template <bool kMax>
__device__ float block_reduce(float value, float* scratch) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, value, off);
    value = kMax ? fmaxf(value, other) : value + other;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  value = scratch[0];
#pragma unroll
  for (int w = 1; w < kSoftmaxThreads / 32; ++w) {
    value = kMax ? fmaxf(value, scratch[w]) : value + scratch[w];
  }
  __syncthreads();  // scratch is reused by the next call
  return value;
}

__global__ void __launch_bounds__(kSoftmaxThreads) softmax_kernel(const NaiveArgs a) {
  __shared__ float scratch[kSoftmaxThreads / 32];
  const PagedAttentionParams& p = a.p;
  const int head = blockIdx.x;
  const QueryPlace at = place_of(p, a.first_token + static_cast<int>(blockIdx.z));
  float* row = a.scores + (static_cast<int64_t>(blockIdx.z) * p.num_heads + head) * a.row_stride;
  float m = -INFINITY;
  for (int j = at.first + threadIdx.x; j <= at.position; j += kSoftmaxThreads) {
    m = fmaxf(m, row[j]);
  }
  m = block_reduce<true>(m, scratch);
  float sum = 0.0f;
  for (int j = at.first + threadIdx.x; j <= at.position; j += kSoftmaxThreads) {
    const float e = exp2f(row[j] - m);
    row[j] = e;
    sum += e;
  }
  const float inv = 1.0f / block_reduce<false>(sum, scratch);  // ≥ 1: the maximum's term is 1
  for (int j = at.first + threadIdx.x; j <= at.position; j += kSoftmaxThreads) row[j] *= inv;
}

template <int D, DType F>
__global__ void __launch_bounds__(kPvThreads) pv_kernel(const NaiveArgs a) {
  using Fmt = KvFormat<F>;
  constexpr int kLanes = D / 8;
  constexpr int kRows = kPvThreads / kLanes;
  constexpr int kWarps = kPvThreads / 32;
  constexpr int kUnroll = kPvUnroll;
  __shared__ float s_acc[kWarps][D];
  const PagedAttentionParams& p = a.p;
  const int head = blockIdx.x;
  const int token = a.first_token + static_cast<int>(blockIdx.z);
  const QueryPlace at = place_of(p, token);
  const int kv_head = head / (p.num_heads / p.num_kv_heads);
  const int part = threadIdx.x % kLanes;
  const int row = threadIdx.x / kLanes;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float* weights =
      a.scores + (static_cast<int64_t>(blockIdx.z) * p.num_heads + head) * a.row_stride;
  const auto* cache = static_cast<const unsigned char*>(p.cache.v);

  float acc[8] = {};
  for (int r0 = at.first; r0 <= at.position; r0 += kRows * kUnroll) {
    typename Fmt::Raw8 raw[kUnroll];
    float w[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int j = r0 + u * kRows + row;
      raw[u] = {};
      w[u] = 0.0f;
      if (j <= at.position) {
        const int64_t vector = cache_vector(p, at.seq, j, kv_head);
        raw[u] = load_raw8<F>(cache + (vector * D + part * 8) * Fmt::kBytes);
        w[u] = weights[j];
        if constexpr (Fmt::kQuantized) w[u] *= __ldg(p.cache.v_scale + vector);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      float v[8];
      Fmt::to_float(raw[u], v);
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[i] = fmaf(w[u], v[i], acc[i]);
    }
  }
  // Rows of a warp (lanes kLanes apart), then the warps.
#pragma unroll
  for (int i = 0; i < 8; ++i) {
#pragma unroll
    for (int off = kLanes; off < 32; off *= 2) acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], off);
  }
  if (lane < kLanes) {
#pragma unroll
    for (int i = 0; i < 8; ++i) s_acc[warp][part * 8 + i] = acc[i];
  }
  __syncthreads();
  for (int d = threadIdx.x; d < D; d += kPvThreads) {
    float o = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) o += s_acc[w][d];
    p.out[(static_cast<int64_t>(token) * p.num_heads + head) * D + d] = __float2bfloat16(o);
  }
}

template <int D, DType F>
void launch_chunks(const PagedAttentionParams& p, cudaStream_t stream) {
  NaiveArgs a;
  a.p = p;
  a.row_stride = static_cast<int>(naive_token_bytes(1, p.max_context_len) / sizeof(float));
  a.scores = static_cast<float*>(p.workspace);
  const size_t fit = p.workspace_bytes / naive_token_bytes(p.num_heads, p.max_context_len);
  const int chunk = static_cast<int>(
      std::min<size_t>({fit, size_t{kMaxGridY}, static_cast<size_t>(p.num_tokens)}));
  const auto key_tiles = static_cast<unsigned>((p.max_context_len + kKeyTile - 1) / kKeyTile);
  const auto heads = static_cast<unsigned>(p.num_heads);
  for (int t0 = 0; t0 < p.num_tokens; t0 += chunk) {
    a.first_token = t0;
    const auto tokens = static_cast<unsigned>(std::min(chunk, p.num_tokens - t0));
    scores_kernel<D, F><<<dim3(heads, key_tiles, tokens), kScoreThreads, 0, stream>>>(a);
    INFERLAB_CUDA_CHECK_LAUNCH();
    softmax_kernel<<<dim3(heads, 1, tokens), kSoftmaxThreads, 0, stream>>>(a);
    INFERLAB_CUDA_CHECK_LAUNCH();
    pv_kernel<D, F><<<dim3(heads, 1, tokens), kPvThreads, 0, stream>>>(a);
    INFERLAB_CUDA_CHECK_LAUNCH();
  }
}

template <int D>
void launch_format(const PagedAttentionParams& p, cudaStream_t stream) {
  switch (p.cache.format) {
    case DType::bf16:
      return launch_chunks<D, DType::bf16>(p, stream);
    case DType::int8:
      return launch_chunks<D, DType::int8>(p, stream);
    case DType::fp8:
      return launch_chunks<D, DType::fp8>(p, stream);
    default:
      throw std::invalid_argument("paged_attention: the cache must be bf16, int8 or fp8");
  }
}

}  // namespace

void launch_naive(const PagedAttentionParams& p, cudaStream_t stream) {
  if (p.head_dim == 64) {
    launch_format<64>(p, stream);
  } else if (p.head_dim == 128) {
    launch_format<128>(p, stream);
  } else {
    throw std::invalid_argument("paged_attention: head_dim must be 64 or 128");
  }
}

}  // namespace inferlab::engine::cuda::detail
