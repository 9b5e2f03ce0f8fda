// The unfused attention baseline (`naive` in PagedAttentionParams): what an implementation
// without FlashAttention runs, three kernels with the scores materialized in device memory.
//   1. scores: S[t, h, j] = (q_t,h · k_j) · softmax_scale for every position j that query token t
//      sees (causal, within the sliding window), fp32, log2 domain;
//   2. softmax: each (t, h) row over its visible positions, in place (max, exp2 and sum, scale);
//   3. P·V: out[t, h] = Σ_j P[t, h, j] v_j.
// Decode, prefill and mixed batches take the same kernels: each token finds its sequence by a
// binary search over query_start. The workspace holds score rows for a chunk of tokens
// (workspace_bytes / naive_token_bytes of them, rows as long as the longest context); the
// launcher walks the batch in such chunks, so a bounded workspace serves any batch.
//
// Two ways of walking the work, chosen per call:
//  - one query token per CTA (decode and mixed batches, where consecutive tokens belong to
//    different sequences; every batch at head_dim 192 and 256): kLanes = row_lanes<head_dim>()
//    threads per key or value row, 16 bytes of bf16 (8 of int8/fp8) each, consecutive threads
//    along a row;
//  - kGroup consecutive query tokens per CTA (batches whose sequences all have several new
//    tokens: prefill), so that a tile of keys or values, staged in shared memory as fp32, serves
//    the group's tokens instead of being read again from L2 for each one (at 2048 tokens that is
//    17 GB of L2 traffic per layer for S and as much for P·V otherwise). A group that straddles
//    sequences is worked one run of same-sequence tokens after another. Up to head_dim 128
//    only (kMaxGroupedDim): at 192 and 256 the staged fp32 tiles pass the 48 KB of static
//    shared memory (64 keys × 260 floats alone are 65 KB) and P·V's thread layout wants
//    head_dim to divide its 128 threads, so those sizes take the one-token kernels (the naive
//    path is the ablation's baseline, not a path the engine serves with).
// Keys and values are read once per query head (the heads of a KV head run in neighbouring CTAs
// and share them in L2). The sums have a fixed order: two runs give the same bits.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/cuda/attention_device.cuh"
#include "engine/cuda/attention_kernels.hpp"
#include "engine/cuda/cuda_check.hpp"

namespace inferlab::engine::cuda::detail {
namespace {

constexpr int kThreads = 128;    // scores and P·V
constexpr int kKeys = 64;        // positions per CTA (scores) or per staged tile (P·V)
constexpr int kGroup = 16;       // query tokens per CTA in prefill batches
constexpr int kScoreUnroll = 4;  // one token per CTA: key rows each thread has in flight
constexpr int kPvUnroll = 8;     // one token per CTA: value rows each thread has in flight
constexpr int kSoftmaxThreads = 256;
constexpr int kMaxGrid = 65535;      // grid y and z
constexpr int kMaxGroupedDim = 128;  // largest head_dim of the grouped (prefill) kernels

struct NaiveArgs {
  PagedAttentionParams p;
  int first_token;  // the chunk's first token
  int tokens;       // tokens in the chunk
  int group;        // query tokens per CTA: 1 or kGroup; blockIdx.z · group = token - first_token
  int row_stride;   // floats per (token, head) score row
  float* scores;    // [chunk tokens][num_heads][row_stride]
};

// Where a CTA's query tokens stand: sequence, position, and the first position each one sees.
struct GroupPlaces {
  int seq[kGroup];
  int position[kGroup];
  int first[kGroup];
};

// Fills `at` for the CTA's tokens (g0 .. g0 + count − 1 of the chunk); returns count. Ends with a
// barrier.
__device__ int load_places(const NaiveArgs& a, GroupPlaces& at, int g0) {
  const PagedAttentionParams& p = a.p;
  const int count = min(a.group, a.tokens - g0);
  if (static_cast<int>(threadIdx.x) < count) {
    const int token = a.first_token + g0 + static_cast<int>(threadIdx.x);
    // The last sequence whose start is at or before the token (sequences without new tokens
    // share their start with the next one, which is the one that holds it).
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
    at.seq[threadIdx.x] = lo;
    at.position[threadIdx.x] = position;
    at.first[threadIdx.x] = p.sliding_window > 0 ? max(0, position - p.sliding_window + 1) : 0;
  }
  __syncthreads();
  return count;
}

// The end of the run of tokens from u0 on that share u0's sequence.
__device__ __forceinline__ int run_end(const GroupPlaces& at, int u0, int count) {
  int u1 = u0 + 1;
  while (u1 < count && at.seq[u1] == at.seq[u0]) ++u1;
  return u1;
}

// (slot, kv head) index of position j of sequence seq.
__device__ __forceinline__ int64_t cache_vector(const PagedAttentionParams& p, int seq, int j,
                                                int kv_head) {
  const int32_t block =
      p.block_tables[static_cast<int64_t>(seq) * p.block_table_stride + j / p.block_size];
  return (static_cast<int64_t>(block) * p.block_size + j % p.block_size) * p.num_kv_heads + kv_head;
}

// Rows [lo, hi) of positions [t0, t0 + kKeys) of one sequence's keys or values into s_rows
// ([kKeys][kRowFloats] fp32, unscaled; zeros elsewhere) and their scales into s_scales.
template <int D, DType F, int kRowFloats>
__device__ void stage_rows(float* s_rows, float* s_scales, const void* cache, const float* scales,
                           const PagedAttentionParams& p, int seq, int kv_head, int t0, int lo,
                           int hi) {
  using Fmt = KvFormat<F>;
  constexpr int kLanes = D / 8;
  constexpr int kRows = kThreads / kLanes;
  const int part = threadIdx.x % kLanes;
  for (int r = threadIdx.x / kLanes; r < kKeys; r += kRows) {
    const int j = t0 + r;
    float v[8] = {};
    float scale = 0.0f;
    if (j >= lo && j < hi) {
      const int64_t vector = cache_vector(p, seq, j, kv_head);
      Fmt::to_float(load_raw8<F>(static_cast<const unsigned char*>(cache) +
                                 (vector * D + part * 8) * Fmt::kBytes),
                    v);
      scale = Fmt::kQuantized ? __ldg(scales + vector) : 1.0f;
    }
    float4* dst = reinterpret_cast<float4*>(s_rows + r * kRowFloats + part * 8);
    dst[0] = make_float4(v[0], v[1], v[2], v[3]);
    dst[1] = make_float4(v[4], v[5], v[6], v[7]);
    if (part == 0) s_scales[r] = scale;
  }
}

// One query token (token g0 of the chunk) against keys [k0, k0 + kKeys).
template <int D, DType F>
__device__ void scores_one_token(const NaiveArgs& a, const GroupPlaces& at, int g0, int head,
                                 int k0) {
  using Fmt = KvFormat<F>;
  constexpr int kLanes = row_lanes<D>();
  constexpr int kRows = kThreads / kLanes;
  const PagedAttentionParams& p = a.p;
  const int lo = max(k0, at.first[0]);
  const int hi = min(k0 + kKeys, at.position[0] + 1);
  if (lo >= hi) return;
  const int token = a.first_token + g0;
  const int kv_head = head / (p.num_heads / p.num_kv_heads);
  const int part = threadIdx.x % kLanes;
  const int row = threadIdx.x / kLanes;
  const bool active = row_lane_active<D>(part);  // (false for lanes past a row of 192)
  float q[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (active) {
    KvFormat<DType::bf16>::to_float(
        load_raw8<DType::bf16>(p.q + static_cast<int64_t>(token) * p.q_row_stride +
                               static_cast<int64_t>(head) * D + part * 8),
        q);
  }
  const float q_scale = p.softmax_scale * kLog2e;
#pragma unroll
  for (int i = 0; i < 8; ++i) q[i] *= q_scale;
  float* out = a.scores + (static_cast<int64_t>(g0) * p.num_heads + head) * a.row_stride;
  const auto* cache = static_cast<const unsigned char*>(p.cache.k);
  for (int r0 = lo; r0 < hi; r0 += kRows * kScoreUnroll) {  // uniform (shuffles below)
    typename Fmt::Raw8 raw[kScoreUnroll];
    int64_t vector[kScoreUnroll];
#pragma unroll
    for (int u = 0; u < kScoreUnroll; ++u) {
      const int j = r0 + u * kRows + row;
      vector[u] = j < hi ? cache_vector(p, at.seq[0], j, kv_head) : 0;
      raw[u] = {};
      if (j < hi && active) raw[u] = load_raw8<F>(cache + (vector[u] * D + part * 8) * Fmt::kBytes);
    }
#pragma unroll
    for (int u = 0; u < kScoreUnroll; ++u) {
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

// Grid (query head, tile of kKeys positions, group of query tokens).
template <int D, DType F>
__global__ void __launch_bounds__(kThreads) scores_kernel(const NaiveArgs a) {
  constexpr int kStride = D + 4;  // floats per staged row: float4 reads of 8 rows hit 32 banks
  __shared__ GroupPlaces at;
  __shared__ __align__(16) float s_k[kKeys * kStride];
  __shared__ __align__(16) float s_q[kGroup * kStride];
  __shared__ float s_kscale[kKeys];
  const PagedAttentionParams& p = a.p;
  const int head = blockIdx.x;
  const int k0 = static_cast<int>(blockIdx.y) * kKeys;
  const int g0 = static_cast<int>(blockIdx.z) * a.group;
  const int count = load_places(a, at, g0);
  if (a.group == 1) return scores_one_token<D, F>(a, at, g0, head, k0);

  const int kv_head = head / (p.num_heads / p.num_kv_heads);
  const float q_scale = p.softmax_scale * kLog2e;
  // This thread's dot products: tokens 2·tp and 2·tp + 1 of the group against keys kg + 16 i.
  const int tp = threadIdx.x / 16;
  const int kg = threadIdx.x % 16;
  for (int u0 = 0; u0 < count;) {
    const int u1 = run_end(at, u0, count);
    const int lo = max(k0, at.first[u0]);
    const int hi = min(k0 + kKeys, at.position[u1 - 1] + 1);
    if (lo < hi) {      // (uniform over the CTA)
      __syncthreads();  // the previous run is done with s_k and s_q
      stage_rows<D, F, kStride>(s_k, s_kscale, p.cache.k, p.cache.k_scale, p, at.seq[u0], kv_head,
                                k0, lo, hi);
      constexpr int kLanes = D / 8;
      for (int r = threadIdx.x / kLanes; r < kGroup; r += kThreads / kLanes) {
        const int part = threadIdx.x % kLanes;
        float q[8] = {};
        if (r >= u0 && r < u1) {
          KvFormat<DType::bf16>::to_float(
              load_raw8<DType::bf16>(p.q +
                                     static_cast<int64_t>(a.first_token + g0 + r) * p.q_row_stride +
                                     static_cast<int64_t>(head) * D + part * 8),
              q);
        }
        float4* dst = reinterpret_cast<float4*>(s_q + r * kStride + part * 8);
        dst[0] = make_float4(q[0] * q_scale, q[1] * q_scale, q[2] * q_scale, q[3] * q_scale);
        dst[1] = make_float4(q[4] * q_scale, q[5] * q_scale, q[6] * q_scale, q[7] * q_scale);
      }
      __syncthreads();
      float dot[2][4] = {};
#pragma unroll 4
      for (int d = 0; d < D; d += 4) {
        float4 q[2], k[4];
#pragma unroll
        for (int t = 0; t < 2; ++t)
          q[t] = *reinterpret_cast<const float4*>(s_q + (2 * tp + t) * kStride + d);
#pragma unroll
        for (int i = 0; i < 4; ++i)
          k[i] = *reinterpret_cast<const float4*>(s_k + (kg + 16 * i) * kStride + d);
#pragma unroll
        for (int t = 0; t < 2; ++t) {
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            float acc = dot[t][i];
            acc = fmaf(q[t].x, k[i].x, acc);
            acc = fmaf(q[t].y, k[i].y, acc);
            acc = fmaf(q[t].z, k[i].z, acc);
            acc = fmaf(q[t].w, k[i].w, acc);
            dot[t][i] = acc;
          }
        }
      }
#pragma unroll
      for (int t = 0; t < 2; ++t) {
        const int u = 2 * tp + t;
        if (u < u0 || u >= u1) continue;
        float* out = a.scores + (static_cast<int64_t>(g0 + u) * p.num_heads + head) * a.row_stride;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int j = k0 + kg + 16 * i;
          if (j >= at.first[u] && j <= at.position[u]) out[j] = dot[t][i] * s_kscale[kg + 16 * i];
        }
      }
    }
    u0 = u1;
  }
}

// The scores kernel of one query token per CTA only (head_dim above kMaxGroupedDim): grid (query
// head, tile of kKeys positions, token).
template <int D, DType F>
__global__ void __launch_bounds__(kThreads) scores_token_kernel(const NaiveArgs a) {
  __shared__ GroupPlaces at;
  const int g0 = static_cast<int>(blockIdx.z);
  load_places(a, at, g0);
  scores_one_token<D, F>(a, at, g0, blockIdx.x, static_cast<int>(blockIdx.y) * kKeys);
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

// Grid (query head, 1, token): one row per CTA.
__global__ void __launch_bounds__(kSoftmaxThreads) softmax_kernel(const NaiveArgs a) {
  __shared__ float scratch[kSoftmaxThreads / 32];
  const PagedAttentionParams& p = a.p;
  const int head = blockIdx.x;
  const int token = a.first_token + static_cast<int>(blockIdx.z);
  int seq = 0, hi = p.num_seqs - 1;  // as in load_places
  while (seq < hi) {
    const int mid = (seq + hi + 1) / 2;
    if (p.query_start[mid] <= token) {
      seq = mid;
    } else {
      hi = mid - 1;
    }
  }
  const int start = p.query_start[seq];
  const int position = p.context_lens[seq] - (p.query_start[seq + 1] - start) + (token - start);
  const int first = p.sliding_window > 0 ? max(0, position - p.sliding_window + 1) : 0;
  float* row = a.scores + (static_cast<int64_t>(blockIdx.z) * p.num_heads + head) * a.row_stride;
  float m = -INFINITY;
  for (int j = first + threadIdx.x; j <= position; j += kSoftmaxThreads) m = fmaxf(m, row[j]);
  m = block_reduce<true>(m, scratch);
  float sum = 0.0f;
  for (int j = first + threadIdx.x; j <= position; j += kSoftmaxThreads) {
    const float e = exp2f(row[j] - m);
    row[j] = e;
    sum += e;
  }
  const float inv = 1.0f / block_reduce<false>(sum, scratch);  // ≥ 1: the maximum's term is 1
  for (int j = first + threadIdx.x; j <= position; j += kSoftmaxThreads) row[j] *= inv;
}

// One query token (token g0 of the chunk) over its whole visible context.
template <int D, DType F>
__device__ void pv_one_token(const NaiveArgs& a, const GroupPlaces& at, int g0, int head,
                             float* s_acc) {
  using Fmt = KvFormat<F>;
  constexpr int kLanes = row_lanes<D>();
  constexpr int kRows = kThreads / kLanes;
  constexpr int kWarps = kThreads / 32;
  const PagedAttentionParams& p = a.p;
  const int kv_head = head / (p.num_heads / p.num_kv_heads);
  const int part = threadIdx.x % kLanes;
  const int row = threadIdx.x / kLanes;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const bool active = row_lane_active<D>(part);  // (false for lanes past a row of 192)
  const float* weights = a.scores + (static_cast<int64_t>(g0) * p.num_heads + head) * a.row_stride;
  const auto* cache = static_cast<const unsigned char*>(p.cache.v);
  float acc[8] = {};
  for (int r0 = at.first[0]; r0 <= at.position[0]; r0 += kRows * kPvUnroll) {
    typename Fmt::Raw8 raw[kPvUnroll];
    float w[kPvUnroll];
#pragma unroll
    for (int u = 0; u < kPvUnroll; ++u) {
      const int j = r0 + u * kRows + row;
      raw[u] = {};
      w[u] = 0.0f;
      if (j <= at.position[0]) {
        const int64_t vector = cache_vector(p, at.seq[0], j, kv_head);
        if (active) raw[u] = load_raw8<F>(cache + (vector * D + part * 8) * Fmt::kBytes);
        w[u] = weights[j];
        if constexpr (Fmt::kQuantized) w[u] *= __ldg(p.cache.v_scale + vector);
      }
    }
#pragma unroll
    for (int u = 0; u < kPvUnroll; ++u) {
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
  if (lane < kLanes && active) {
#pragma unroll
    for (int i = 0; i < 8; ++i) s_acc[warp * D + part * 8 + i] = acc[i];
  }
  __syncthreads();
  const int64_t token = a.first_token + g0;
  for (int d = threadIdx.x; d < D; d += kThreads) {
    float o = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) o += s_acc[w * D + d];
    p.out[(token * p.num_heads + head) * D + d] = __float2bfloat16(o);
  }
}

// Grid (query head, 1, group of query tokens).
template <int D, DType F>
__global__ void __launch_bounds__(kThreads, 1) pv_kernel(const NaiveArgs a) {
  constexpr int kPStride = kGroup + 4;               // floats per staged weight row (16-byte rows)
  constexpr int kPerThread = kGroup * D / kThreads;  // tokens per thread: 16 (D 128) or 8 (D 64)
  constexpr int kTokenStep = kThreads / D;           // 1 or 2
  __shared__ GroupPlaces at;
  __shared__ __align__(16) float s_v[kKeys * D];
  __shared__ __align__(16) float s_p[kKeys * kPStride];  // [key][token]: weight · value scale
  __shared__ float s_vscale[kKeys];
  __shared__ float s_acc[(kThreads / 32) * D];
  const PagedAttentionParams& p = a.p;
  const int head = blockIdx.x;
  const int g0 = static_cast<int>(blockIdx.z) * a.group;
  const int count = load_places(a, at, g0);
  if (a.group == 1) return pv_one_token<D, F>(a, at, g0, head, s_acc);

  const int kv_head = head / (p.num_heads / p.num_kv_heads);
  const int d = threadIdx.x % D;
  const int u_first = threadIdx.x / D;  // this thread's tokens: u_first + kTokenStep · i
  for (int u0 = 0; u0 < count;) {
    const int u1 = run_end(at, u0, count);
    const int lo = at.first[u0];
    const int hi = at.position[u1 - 1] + 1;
    float acc[kPerThread] = {};
    for (int t0 = lo / kKeys * kKeys; t0 < hi; t0 += kKeys) {
      __syncthreads();  // the previous tile is done with s_v, s_p, s_vscale
      stage_rows<D, F, D>(s_v, s_vscale, p.cache.v, p.cache.v_scale, p, at.seq[u0], kv_head, t0, lo,
                          hi);
      __syncthreads();
      // The run's weights (zero outside each token's visible positions, and for the group's
      // other tokens), times the values' scales; reads along each score row.
      for (int i = threadIdx.x; i < kKeys * kGroup; i += kThreads) {
        const int u = i / kKeys;
        const int k = i % kKeys;
        const int j = t0 + k;
        float w = 0.0f;
        if (u >= u0 && u < u1 && j >= at.first[u] && j <= at.position[u]) {
          w = a.scores[(static_cast<int64_t>(g0 + u) * p.num_heads + head) * a.row_stride + j] *
              s_vscale[k];
        }
        s_p[k * kPStride + u] = w;
      }
      __syncthreads();
      for (int k = 0; k < kKeys; ++k) {
        const float v = s_v[k * D + d];
#pragma unroll
        for (int i = 0; i < kPerThread; ++i) {
          acc[i] = fmaf(s_p[k * kPStride + u_first + kTokenStep * i], v, acc[i]);
        }
      }
    }
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int u = u_first + kTokenStep * i;
      if (u >= u0 && u < u1) {
        const int64_t token = a.first_token + g0 + u;
        p.out[(token * p.num_heads + head) * D + d] = __float2bfloat16(acc[i]);
      }
    }
    u0 = u1;
  }
}

// The P·V kernel of one query token per CTA only (head_dim above kMaxGroupedDim): grid (query
// head, 1, token).
template <int D, DType F>
__global__ void __launch_bounds__(kThreads) pv_token_kernel(const NaiveArgs a) {
  __shared__ GroupPlaces at;
  __shared__ float s_acc[(kThreads / 32) * D];
  const int g0 = static_cast<int>(blockIdx.z);
  load_places(a, at, g0);
  pv_one_token<D, F>(a, at, g0, blockIdx.x, s_acc);
}

template <int D, DType F>
void launch_chunks(const PagedAttentionParams& p, cudaStream_t stream) {
  NaiveArgs a;
  a.p = p;
  a.row_stride = static_cast<int>(naive_token_bytes(1, p.max_context_len) / sizeof(float));
  a.scores = static_cast<float*>(p.workspace);
  // Groups of tokens only where every sequence has several new tokens (counted by the caller):
  // in a batch with single-token sequences a group would hold several of them, each walking its
  // own context one after another.
  // (Head_dim above kMaxGroupedDim: one token per CTA always.)
  a.group = D <= kMaxGroupedDim && p.max_query_len > 1 && p.single_query_seqs == 0 ? kGroup : 1;
  const size_t fit = p.workspace_bytes / naive_token_bytes(p.num_heads, p.max_context_len);
  const int chunk = static_cast<int>(
      std::min<size_t>({fit, size_t{kMaxGrid}, static_cast<size_t>(p.num_tokens)}));
  const int key_tiles = (p.max_context_len + kKeys - 1) / kKeys;
  if (key_tiles > kMaxGrid) {
    throw std::invalid_argument("paged_attention: the naive path takes contexts of at most " +
                                std::to_string(kMaxGrid * kKeys) + " positions");
  }
  const auto heads = static_cast<unsigned>(p.num_heads);
  for (int t0 = 0; t0 < p.num_tokens; t0 += chunk) {
    a.first_token = t0;
    a.tokens = std::min(chunk, p.num_tokens - t0);
    const auto groups = static_cast<unsigned>((a.tokens + a.group - 1) / a.group);
    const dim3 score_grid(heads, static_cast<unsigned>(key_tiles), groups);
    if constexpr (D <= kMaxGroupedDim) {
      scores_kernel<D, F><<<score_grid, kThreads, 0, stream>>>(a);
    } else {
      scores_token_kernel<D, F><<<score_grid, kThreads, 0, stream>>>(a);
    }
    INFERLAB_CUDA_CHECK_LAUNCH();
    softmax_kernel<<<dim3(heads, 1, static_cast<unsigned>(a.tokens)), kSoftmaxThreads, 0, stream>>>(
        a);
    INFERLAB_CUDA_CHECK_LAUNCH();
    if constexpr (D <= kMaxGroupedDim) {
      pv_kernel<D, F><<<dim3(heads, 1, groups), kThreads, 0, stream>>>(a);
    } else {
      pv_token_kernel<D, F><<<dim3(heads, 1, groups), kThreads, 0, stream>>>(a);
    }
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
  with_head_dim(p.head_dim,
                [&](auto head_dim) { launch_format<decltype(head_dim)::value>(p, stream); });
}

}  // namespace inferlab::engine::cuda::detail
