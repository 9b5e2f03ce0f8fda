// Split-K flash-decoding over the paged KV cache: one CTA per (sequence, KV head, group tile of
// query heads, split of the context), so each key and value row is read from memory once for
// all the query heads that share it (GQA). Memory-bound: 16-byte loads, four rows in flight per
// thread, scores staged in shared memory so the K and V passes stay plain streaming loops.
#include <cuda_bf16.h>

#include <cstdint>
#include <stdexcept>

#include "engine/cuda/attention_kernels.hpp"
#include "engine/cuda/cuda_check.hpp"

namespace inferlab::engine::cuda::detail {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kChunk = 256;  // positions scored per pass (scores of a pass sit in shared memory)
constexpr int kUnroll = 4;   // rows each thread has in flight
constexpr float kLog2e = 1.4426950408889634f;

struct DecodeArgs {
  PagedAttentionParams p;
  int group;  // query heads per KV head
  int num_splits;
  int partition;       // positions per split
  float* partial_out;  // [num_tokens][num_heads][num_splits][head_dim], normalized
  float2* partial_ml;  // [num_tokens][num_heads][num_splits]: (running max, sum), log2 domain
};

__device__ __forceinline__ void to_float8(const uint4& raw, float (&out)[8]) {
  const auto* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(pairs[i]);
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}

__device__ __forceinline__ uint4 load16(const __nv_bfloat16* p) {
  return __ldg(reinterpret_cast<const uint4*>(p));
}

// Rows r0 + u·kRows + row (u < kUnroll) of one pass, 16 bytes each; zeros past the pass.
template <int kRows>
__device__ __forceinline__ void load_rows(uint4 (&raw)[kUnroll], const __nv_bfloat16* cache,
                                          const int64_t* rows, int r0, int n, int row, int part) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int r = r0 + u * kRows + row;
    raw[u] = r < n ? load16(cache + rows[r] + part * 8) : make_uint4(0, 0, 0, 0);
  }
}

// Sums each of the N values over the lanes of an aligned group (xor offsets kOff, kOff/2, ..., 1)
// and scatters the sums: on return this lane holds max(N / lanes, 1) of them, those of indices
// first + j. Each step sends half of the values still held and keeps the other half.
template <int N, int kOff>
__device__ __forceinline__ void reduce_scatter(const float (&v)[N], int lane, float* out,
                                               int& first) {
  if constexpr (kOff == 0) {
#pragma unroll
    for (int j = 0; j < N; ++j) out[j] = v[j];
  } else if constexpr (N == 1) {
    const float next[1] = {v[0] + __shfl_xor_sync(0xffffffffu, v[0], kOff)};
    reduce_scatter<1, kOff / 2>(next, lane, out, first);
  } else {
    const bool upper = (lane & kOff) != 0;  // keeps the upper half, sends the lower
    float next[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      const float keep = upper ? v[N / 2 + i] : v[i];
      const float send = upper ? v[i] : v[N / 2 + i];
      next[i] = keep + __shfl_xor_sync(0xffffffffu, send, kOff);
    }
    if (upper) first += N / 2;
    reduce_scatter<N / 2, kOff / 2>(next, lane, out, first);
  }
}

// Thread layout: D/8 consecutive threads ("lanes") share one key or value row, 16 bytes each; a
// CTA covers kRows rows per step. Heads of the group tile are local indices [0, GT); those past
// the group's end (group 3 in a tile of 4) compute on a zero query and are never written.
template <int D, int GT>
__global__ void __launch_bounds__(kThreads) decode_kernel(const DecodeArgs a) {
  constexpr int kLanes = D / 8;
  constexpr int kRows = kThreads / kLanes;
  __shared__ float s_score[GT][kChunk];
  __shared__ int64_t s_row[kChunk];  // element offset of (slot, kv head) for each position
  __shared__ float s_m[GT], s_l[GT], s_alpha[GT];
  __shared__ float s_acc[kWarps][GT][D];

  const PagedAttentionParams& p = a.p;
  const int head_tiles = (a.group + GT - 1) / GT;
  const int kv_head = blockIdx.x / head_tiles;
  const int head_lo = (blockIdx.x % head_tiles) * GT;
  const int heads_here = min(GT, a.group - head_lo);
  const int head0 = kv_head * a.group + head_lo;  // global index of local head 0
  const int seq = blockIdx.y;
  const int split = blockIdx.z;
  const int tid = threadIdx.x;
  const int part = tid % kLanes;  // which 8 elements of the row
  const int row = tid / kLanes;
  const int warp = tid / 32;
  const int lane = tid % 32;

  const int token = p.query_start[seq];
  if (p.query_start[seq + 1] - token != 1) return;  // no new token: nothing to write
  const int ctx = p.context_lens[seq];
  const int first = p.sliding_window > 0 ? max(0, ctx - p.sliding_window) : 0;
  const int begin = max(split * a.partition, first);
  const int end = min((split + 1) * a.partition, ctx);
  const bool direct = a.num_splits == 1;
  const int64_t out_row = static_cast<int64_t>(token) * p.num_heads;

  if (begin >= end) {  // an empty split (short or windowed context): weight zero in the combine
    for (int i = tid; i < heads_here * D; i += kThreads) {
      const int h = i / D;
      const int64_t r = (out_row + head0 + h) * a.num_splits + split;
      if (direct) {
        p.out[(out_row + head0 + h) * D + i % D] = __float2bfloat16(0.0f);
      } else {
        // Zeros too, so that the combine's loads need no branch (and stay in flight together).
        a.partial_out[r * D + i % D] = 0.0f;
        if (i % D == 0) a.partial_ml[r] = make_float2(-INFINITY, 0.0f);
      }
    }
    return;
  }

  // Query rows, pre-scaled so that scores are in the log2 domain (exp2f below).
  float q[GT][8];
  const float q_scale = p.softmax_scale * kLog2e;
#pragma unroll
  for (int h = 0; h < GT; ++h) {
    if (h < heads_here) {
      to_float8(load16(p.q + static_cast<int64_t>(token) * p.q_row_stride +
                       static_cast<int64_t>(head0 + h) * D + part * 8),
                q[h]);
#pragma unroll
      for (int i = 0; i < 8; ++i) q[h][i] *= q_scale;
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) q[h][i] = 0.0f;
    }
  }
  if (tid < GT) {
    s_m[tid] = -INFINITY;
    s_l[tid] = 0.0f;
  }
  float acc[GT][8];
#pragma unroll
  for (int h = 0; h < GT; ++h) {
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[h][i] = 0.0f;
  }

  const int32_t* table = p.block_tables + static_cast<int64_t>(seq) * p.block_table_stride;
  const int64_t slot_stride = static_cast<int64_t>(p.num_kv_heads) * D;
  for (int c0 = begin; c0 < end; c0 += kChunk) {
    const int n = min(kChunk, end - c0);
    __syncthreads();  // the previous pass is done with s_row and s_score
    for (int r = tid; r < n; r += kThreads) {
      const int pos = c0 + r;
      const int64_t slot =
          static_cast<int64_t>(table[pos / p.block_size]) * p.block_size + pos % p.block_size;
      s_row[r] = slot * slot_stride + static_cast<int64_t>(kv_head) * D;
    }
    __syncthreads();

    // Scores: each row's partial dot products summed over its kLanes threads by shuffles (the
    // loop bound is uniform over the CTA so that every lane reaches them); the next step's rows
    // load while this step's are used.
    uint4 raw[kUnroll];
    load_rows<kRows>(raw, static_cast<const __nv_bfloat16*>(p.cache.k), s_row, 0, n, row, part);
    for (int r0 = 0; r0 < n; r0 += kRows * kUnroll) {
      uint4 next[kUnroll];
      load_rows<kRows>(next, static_cast<const __nv_bfloat16*>(p.cache.k), s_row, r0 + kRows * kUnroll, n, row, part);
      // Partial dot products of every (row u, head h) at index u·GT + h, then one reduce-scatter
      // over the row's lanes (N − 1 shuffles for N values instead of N log2(kLanes)).
      constexpr int kValues = kUnroll * GT;
      float dots[kValues];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        float k[8];
        to_float8(raw[u], k);
#pragma unroll
        for (int h = 0; h < GT; ++h) {
          float d = 0.0f;
#pragma unroll
          for (int i = 0; i < 8; ++i) d = fmaf(q[h][i], k[i], d);
          dots[u * GT + h] = d;
        }
      }
      constexpr int kKept = kValues >= kLanes ? kValues / kLanes : 1;
      float sums[kKept];
      int first = 0;
      reduce_scatter<kValues, kLanes / 2>(dots, part, sums, first);
      // With fewer values than lanes, kLanes / kValues lanes hold each sum: the lowest writes.
      if (kValues >= kLanes || (part & (kLanes / kValues - 1)) == 0) {
#pragma unroll
        for (int j = 0; j < kKept; ++j) {
          const int index = first + j;
          const int r = r0 + (index / GT) * kRows + row;
          if (r < n) s_score[index % GT][r] = sums[j];
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) raw[u] = next[u];
    }
    // The first values load while the softmax runs (they do not depend on it).
    load_rows<kRows>(raw, static_cast<const __nv_bfloat16*>(p.cache.v), s_row, 0, n, row, part);
    __syncthreads();

    // Online softmax over the pass: warp w owns heads w, w + kWarps, ...
    for (int h = warp; h < GT; h += kWarps) {
      float mx = -INFINITY;
      for (int i = lane; i < n; i += 32) mx = fmaxf(mx, s_score[h][i]);
#pragma unroll
      for (int off = 16; off > 0; off /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
      const float m_old = s_m[h];
      const float m_new = fmaxf(m_old, mx);  // finite: the pass has at least one position
      float sum = 0.0f;
      for (int i = lane; i < n; i += 32) {
        const float e = exp2f(s_score[h][i] - m_new);
        s_score[h][i] = e;
        sum += e;
      }
#pragma unroll
      for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
      __syncwarp();
      if (lane == 0) {
        const float alpha = exp2f(m_old - m_new);  // 0 on the first pass (m_old = -inf)
        s_alpha[h] = alpha;
        s_l[h] = s_l[h] * alpha + sum;
        s_m[h] = m_new;
      }
    }
    __syncthreads();

    // Values: each thread accumulates its 8 elements over the rows it owns.
#pragma unroll
    for (int h = 0; h < GT; ++h) {
      const float alpha = s_alpha[h];
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[h][i] *= alpha;
    }
    for (int r0 = 0; r0 < n; r0 += kRows * kUnroll) {
      uint4 next[kUnroll];
      load_rows<kRows>(next, static_cast<const __nv_bfloat16*>(p.cache.v), s_row, r0 + kRows * kUnroll, n, row, part);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int r = r0 + u * kRows + row;
        if (r < n) {
          float v[8];
          to_float8(raw[u], v);
#pragma unroll
          for (int h = 0; h < GT; ++h) {
            const float w = s_score[h][r];
#pragma unroll
            for (int i = 0; i < 8; ++i) acc[h][i] = fmaf(w, v[i], acc[h][i]);
          }
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) raw[u] = next[u];
    }
  }

  // Sum the rows' partial outputs: first the rows of a warp (lanes kLanes apart), then the warps.
#pragma unroll
  for (int h = 0; h < GT; ++h) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
#pragma unroll
      for (int off = kLanes; off < 32; off *= 2) {
        acc[h][i] += __shfl_xor_sync(0xffffffffu, acc[h][i], off);
      }
    }
  }
  if (lane < kLanes) {
#pragma unroll
    for (int h = 0; h < GT; ++h) {
#pragma unroll
      for (int i = 0; i < 8; ++i) s_acc[warp][h][part * 8 + i] = acc[h][i];
    }
  }
  __syncthreads();
  for (int i = tid; i < heads_here * D; i += kThreads) {
    const int h = i / D;
    const int d = i % D;
    float o = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) o += s_acc[w][h][d];
    o /= s_l[h];
    if (direct) {
      p.out[(out_row + head0 + h) * D + d] = __float2bfloat16(o);
    } else {
      const int64_t r = (out_row + head0 + h) * a.num_splits + split;
      a.partial_out[r * D + d] = o;
      if (d == 0) a.partial_ml[r] = make_float2(s_m[h], s_l[h]);
    }
  }
}

// out = Σ_s w_s o_s / Σ_s w_s with w_s = l_s 2^(m_s - M): each split's normalized output
// weighted by its share of the softmax denominator. One CTA per (head, sequence), a thread per
// element; the weights are computed once, in parallel, and the sum over splits keeps several
// loads in flight.
template <int D>
__global__ void __launch_bounds__(D) combine_kernel(const DecodeArgs a) {
  constexpr int kCombineWarps = D / 32;
  __shared__ float s_w[kMaxSplits];
  __shared__ float s_red[kCombineWarps];
  const PagedAttentionParams& p = a.p;
  const int head = blockIdx.x;
  const int seq = blockIdx.y;
  const int d = threadIdx.x;
  const int token = p.query_start[seq];
  if (p.query_start[seq + 1] - token != 1) return;
  const int64_t base = (static_cast<int64_t>(token) * p.num_heads + head) * a.num_splits;
  const float2* ml = a.partial_ml + base;

  float m_max = -INFINITY;
  for (int s = d; s < a.num_splits; s += D) m_max = fmaxf(m_max, ml[s].x);
#pragma unroll
  for (int off = 16; off > 0; off /= 2) {
    m_max = fmaxf(m_max, __shfl_xor_sync(0xffffffffu, m_max, off));
  }
  if (d % 32 == 0) s_red[d / 32] = m_max;
  __syncthreads();
#pragma unroll
  for (int w = 0; w < kCombineWarps; ++w) m_max = fmaxf(m_max, s_red[w]);
  __syncthreads();  // s_red is reused below

  float total = 0.0f;
  for (int s = d; s < a.num_splits; s += D) {
    const float2 v = ml[s];
    const float w = v.y > 0.0f ? v.y * exp2f(v.x - m_max) : 0.0f;  // empty splits: (-inf, 0), zeros
    s_w[s] = w;
    total += w;
  }
#pragma unroll
  for (int off = 16; off > 0; off /= 2) total += __shfl_xor_sync(0xffffffffu, total, off);
  if (d % 32 == 0) s_red[d / 32] = total;
  __syncthreads();
  total = 0.0f;
#pragma unroll
  for (int w = 0; w < kCombineWarps; ++w) total += s_red[w];

  float o = 0.0f;
  const float* partial = a.partial_out + base * D + d;
#pragma unroll 8
  for (int s = 0; s < a.num_splits; ++s) o = fmaf(s_w[s], partial[static_cast<int64_t>(s) * D], o);
  p.out[(static_cast<int64_t>(token) * p.num_heads + head) * D + d] =
      __float2bfloat16(total > 0.0f ? o / total : 0.0f);
}

template <int D, int GT>
void launch(const DecodeArgs& a, cudaStream_t stream) {
  const int head_tiles = (a.group + GT - 1) / GT;
  const dim3 grid(static_cast<unsigned>(a.p.num_kv_heads * head_tiles),
                  static_cast<unsigned>(a.p.num_seqs), static_cast<unsigned>(a.num_splits));
  decode_kernel<D, GT><<<grid, kThreads, 0, stream>>>(a);
  INFERLAB_CUDA_CHECK_LAUNCH();
  if (a.num_splits > 1) {
    const dim3 combine_grid(static_cast<unsigned>(a.p.num_heads),
                            static_cast<unsigned>(a.p.num_seqs));
    combine_kernel<D><<<combine_grid, D, 0, stream>>>(a);
    INFERLAB_CUDA_CHECK_LAUNCH();
  }
}

template <int D>
void launch_tile(const DecodeArgs& a, cudaStream_t stream) {
  // The smallest tile of 1, 2, 4 or 8 heads that holds the group (larger groups take several).
  if (a.group == 1) return launch<D, 1>(a, stream);
  if (a.group == 2) return launch<D, 2>(a, stream);
  if (a.group <= 4) return launch<D, 4>(a, stream);
  return launch<D, 8>(a, stream);
}

template <int D, int GT>
int resident() {
  // Asked once per kernel (a host query: no synchronisation, fine during graph capture).
  static const int count = [] {
    int n = 0;
    INFERLAB_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, decode_kernel<D, GT>, kThreads, 0));
    return n > 0 ? n : 1;
  }();
  return count;
}

template <int D>
int resident_tile(int group) {
  if (group == 1) return resident<D, 1>();
  if (group == 2) return resident<D, 2>();
  if (group <= 4) return resident<D, 4>();
  return resident<D, 8>();
}

}  // namespace

int decode_ctas_per_sm(int head_dim, int group) {
  return head_dim == 64 ? resident_tile<64>(group) : resident_tile<128>(group);
}

void launch_decode(const PagedAttentionParams& p, int num_splits, int partition,
                   cudaStream_t stream) {
  DecodeArgs a;
  a.p = p;
  a.group = p.num_heads / p.num_kv_heads;
  a.num_splits = num_splits;
  a.partition = partition;
  a.partial_out = static_cast<float*>(p.workspace);
  // The (max, sum) pairs follow the outputs; that offset is a multiple of 8 bytes.
  const size_t outputs = static_cast<size_t>(p.num_tokens) * p.num_heads * num_splits * p.head_dim;
  a.partial_ml = num_splits > 1 ? reinterpret_cast<float2*>(a.partial_out + outputs) : nullptr;
  if (p.head_dim == 64) {
    launch_tile<64>(a, stream);
  } else if (p.head_dim == 128) {
    launch_tile<128>(a, stream);
  } else {
    throw std::invalid_argument("paged_attention: head_dim must be 64 or 128");
  }
}

}  // namespace inferlab::engine::cuda::detail
