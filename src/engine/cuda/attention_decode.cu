// Split-K flash-decoding over the paged KV cache: one CTA per (sequence, KV head, group tile of
// query heads, split of the context), so each key and value row is read from memory once for
// all the query heads that share it (GQA). Any cache format (bf16, int8, FP8 E4M3).
//
// Why it is built this way. Llama 3 8B at batch 1, context 1024: 1024 positions × 8 KV heads ×
// 128 × 2 bytes × (keys + values) = 4 MiB of bf16 per layer, 0.93 µs at 4.5 TB/s; the kernel
// before this one took 16.6 µs per layer on an H100 (about 250 GB/s). At that size the time is
// latency, not bandwidth: what counts is how many dependent trips to memory lie on the path and
// how many bytes are in flight at once. The old path made about a dozen: in the split kernel the
// sequence's start, then its context length (loads behind a branch are not hoisted), then the
// block-table entries of every position (into shared memory, a barrier), then keys 64 rows at a
// time with the next 32 issued only once the first had arrived, the same for values; then the
// grid had to drain before the combine kernel started, which looked up the sequence's token,
// then read the (max, sum) pairs, then the partials 8 splits at a time. The split heuristic gave
// 14 splits of 74 positions: 112 CTAs holding at most 16 KB each in flight, under 2 MB over the
// GPU. This path makes four:
//   1. the sequence's start and context length together with the block-table entries of the
//      split's first chunk (speculatively: they depend only on the split, not on the context);
//   2. the query and the whole chunk of keys and values at once, by cp.async into shared memory
//      (16 KB of keys and 16 KB of values per chunk: 64 positions of bf16 at head_dim 128, 128 of
//      int8/fp8), the next chunk's copies (and block-table entries) issued before this chunk's
//      math (two stages);
//   3. (the combine) the sequence's token with the partials of 16 splits, in one trip in a decode
//      batch, since the partials are indexed by sequence;
//   4. the output.
// The split count (attention.cu) gives every SM about one CTA when the batch alone does not:
// 8 KV heads × 16 splits of 64 positions at batch 1 × 1024, each CTA one 32 KB chunk, so the
// whole layer is requested at once. Both kernels are launched with programmatic dependent launch,
// so each one's launch and CTA start-up overlap the end of the kernel before it
// (attention_device.cuh); INFERLAB_ENGINE_ATTENTION_PDL=0 turns that off for an A/B.
#include <cuda_bf16.h>

#include <cstdint>
#include <stdexcept>

#include "engine/cuda/attention_decode_common.cuh"
#include "engine/cuda/attention_device.cuh"
#include "engine/cuda/attention_kernels.hpp"
#include "engine/cuda/cuda_check.hpp"

namespace inferlab::engine::cuda::detail {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kStageBytes = 16384;  // bytes of keys (and as many of values) per chunk
constexpr int kUnroll = 4;          // rows per thread between two shuffle reductions
// Splits whose partials the combine has in flight at once (the predictor prices each further
// group as one more trip: model/engine_decode_plan.hpp).
constexpr int kCombineUnroll = static_cast<int>(kDecodeCombineGroup);

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

constexpr int gcd(int a, int b) {
  return b == 0 ? a : gcd(b, a % b);
}

// Sizes for head_dim D, a tile of GT query heads and cache format F. Two thread layouts: for the
// copies, kPieces 16-byte pieces per row, thread tid moving piece c % kPieces of row c / kPieces
// for c = tid + i · kThreads (at head_dim 64, 128 and 256 kPieces divides kThreads, so a thread
// keeps one piece of rows kThreads / kPieces apart); for the math, kLanes = row_lanes<D>() threads
// per row hold 8 elements each (16 bytes of bf16 or 8 of int8/fp8 from shared memory). A chunk is
// as many positions as fit kStageBytes in whole steps of both layouts: 16 KB at head_dim 64, 128
// and 256, 12 KB at 192 (32 positions of bf16, 64 of int8/fp8).
template <int D, int GT, DType F>
struct Tile {
  using Fmt = KvFormat<F>;
  static constexpr int kRowBytes = D * Fmt::kBytes;
  static constexpr int kPieces = kRowBytes / 16;
  static constexpr bool kUniformCopy = kThreads % kPieces == 0;
  static constexpr int kLanes = row_lanes<D>();
  static constexpr int kRows = kThreads / kLanes;
  static constexpr int kCopyStep = kThreads / gcd(kPieces, kThreads);  // rows of whole copy steps
  static constexpr int kMathStep = kRows * kUnroll;
  static constexpr int kChunkStep = kCopyStep / gcd(kCopyStep, kMathStep) * kMathStep;  // lcm
  static constexpr int kChunk = kStageBytes / kRowBytes / kChunkStep * kChunkStep;      // positions
  static constexpr int kCopies = kChunk * kPieces / kThreads;  // per thread, operand and chunk
  static constexpr int kScales = Fmt::kQuantized ? kChunk : 0;
  // Dynamic shared memory: [stage][keys, values][kStageBytes], the scales [stage][keys,
  // values][kChunk], the chunk's scores [GT][kChunk].
  static constexpr size_t kStageArea = 4 * size_t{kStageBytes};
  static constexpr size_t kSmemBytes = kStageArea + (4 * kScales + GT * kChunk) * sizeof(float);
  static_assert(kCopies * kThreads == kChunk * kPieces, "a chunk is whole copy steps");
  static_assert(kChunk % (kRows * kUnroll) == 0, "a chunk is whole math steps");
  static_assert(kWarps * GT * D * sizeof(float) <= kStageArea, "the final sums fit the stages");
  static_assert(kLanes != D / 8 || kChunk == kStageBytes / kRowBytes,
                "head_dim 64, 128, 256: a chunk is the whole stage");
};

// Row and piece of a thread's copy i (the copy layout above). Where kPieces divides kThreads
// the thread's first row and its piece are computed once (first = tid / kPieces, piece =
// tid % kPieces); else first is tid itself and both follow from tid + i · kThreads.
template <typename T>
__device__ __forceinline__ int copy_row(int first, int i) {
  if constexpr (T::kUniformCopy) {
    return first + i * (kThreads / T::kPieces);
  } else {
    return (first + i * kThreads) / T::kPieces;
  }
}
template <typename T>
__device__ __forceinline__ int copy_piece(int first, int piece, int i) {
  if constexpr (T::kUniformCopy) {
    return piece;
  } else {
    return (first + i * kThreads) % T::kPieces;
  }
}

// The block-table entries of this thread's copy rows of the chunk starting at chunk_start.
// Entries past the table's width are not read; entries past the context may be garbage and are
// never used for an address.
template <typename T>
__device__ __forceinline__ void load_blocks(int32_t (&blocks)[T::kCopies], const int32_t* table,
                                            int table_width, int block_size, int chunk_start,
                                            int copy_first) {
#pragma unroll
  for (int i = 0; i < T::kCopies; ++i) {
    const int index = (chunk_start + copy_row<T>(copy_first, i)) / block_size;
    blocks[i] = index < table_width ? __ldg(table + index) : 0;
  }
}

// Copies this thread's pieces of one operand's chunk (rows at positions in [begin, end); zeros
// elsewhere) into shared memory, and for int8/fp8 the rows' scales.
template <typename T>
__device__ __forceinline__ void issue_rows(unsigned char* s_rows, float* s_scales,
                                           const void* cache, const float* scales,
                                           const int32_t (&blocks)[T::kCopies], int chunk_start,
                                           int begin, int end, int block_size, int num_kv_heads,
                                           int kv_head, int copy_first, int copy_piece0) {
#pragma unroll
  for (int i = 0; i < T::kCopies; ++i) {
    const int r = copy_row<T>(copy_first, i);
    const int piece = copy_piece<T>(copy_first, copy_piece0, i);
    const int pos = chunk_start + r;
    const bool valid = pos >= begin && pos < end;
    int64_t vector = 0;  // (slot, kv head) index
    if (valid) {
      vector = (static_cast<int64_t>(blocks[i]) * block_size + pos % block_size) * num_kv_heads +
               kv_head;
    }
    const auto* src = static_cast<const unsigned char*>(cache) + vector * T::kRowBytes + piece * 16;
    cp_async16(s_rows + r * T::kRowBytes + piece * 16, src, valid ? 16 : 0);
    if constexpr (T::Fmt::kQuantized) {
      if (piece == 0) cp_async4(s_scales + r, scales + vector, valid ? 4 : 0);
    }
  }
}

template <int D, int GT, DType F>
__global__ void __launch_bounds__(kThreads) decode_kernel(const DecodeArgs a) {
  using T = Tile<D, GT, F>;
  using Fmt = KvFormat<F>;
  using Raw8 = typename Fmt::Raw8;
  extern __shared__ __align__(128) unsigned char smem[];
  float* s_scale = reinterpret_cast<float*>(smem + T::kStageArea);  // [stage][K, V][kChunk]
  float* s_score = s_scale + 4 * T::kScales;                        // [GT][kChunk]
  __shared__ float s_m[GT], s_l[GT], s_alpha[GT];

  wait_for_prerequisite_grid();
  const PagedAttentionParams& p = a.p;
  const int head_tiles = (a.group + GT - 1) / GT;
  const int kv_head = blockIdx.x / head_tiles;
  const int head_lo = (blockIdx.x % head_tiles) * GT;
  const int heads_here = min(GT, a.group - head_lo);
  const int head0 = kv_head * a.group + head_lo;  // global index of local head 0
  const int seq = blockIdx.y;
  const int split = blockIdx.z;
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int part = tid % T::kLanes;  // math layout: elements part·8 .. part·8 + 7 of a row
  const int row = tid / T::kLanes;
  const bool active = row_lane_active<D>(part);  // (false for lanes past a row of 192)
  // Copy layout: bytes piece·16 .. piece·16 + 15 of rows copy_first + i · kThreads / kPieces,
  // or (head_dim 192) copy_first = tid (copy_row, copy_piece).
  const int piece = T::kUniformCopy ? tid % T::kPieces : 0;
  const int copy_first = T::kUniformCopy ? tid / T::kPieces : tid;
  const int split_begin = split * a.partition;

  // Trip 1: the sequence's metadata and the table entries of the split's first chunk.
  const int table_row = p.table_rows == nullptr ? seq : p.table_rows[seq];
  const int32_t* table = p.block_tables + static_cast<int64_t>(table_row) * p.block_table_stride;
  int32_t blocks[T::kCopies];
  load_blocks<T>(blocks, table, p.block_table_stride, p.block_size, split_begin, copy_first);
  const int token = p.query_start[seq];
  const int token_end = p.query_start[seq + 1];
  const int ctx = p.context_lens[seq];
  if (token_end - token != 1) return;  // no single new token: not this kernel's sequence
  const int first = p.sliding_window > 0 ? max(0, ctx - p.sliding_window) : 0;
  const int begin = max(split_begin, first);
  const int end = min(split_begin + a.partition, ctx);

  if (begin >= end) {  // an empty split (short or windowed context): weight zero in the combine
    for (int i = tid; i < heads_here * D; i += kThreads) {
      write_split_element<D>(a, token, seq, head0 + i / D, split, i % D, 0.0f, -INFINITY, 0.0f);
    }
    return;
  }
  const int chunk_first = (begin - split_begin) / T::kChunk;
  const int chunk_last = (end - 1 - split_begin) / T::kChunk;
  if (chunk_first != 0) {  // a window starts this split late: the speculative entries miss
    load_blocks<T>(blocks, table, p.block_table_stride, p.block_size,
                   split_begin + chunk_first * T::kChunk, copy_first);
  }

  // Trip 2: the first chunk's keys and values (one cp.async group each), then the query.
  auto issue = [&](int stage, int chunk, int operand) {
    issue_rows<T>(smem + (2 * stage + operand) * kStageBytes,
                  s_scale + (2 * stage + operand) * T::kScales, operand ? p.cache.v : p.cache.k,
                  operand ? p.cache.v_scale : p.cache.k_scale, blocks,
                  split_begin + chunk * T::kChunk, begin, end, p.block_size, p.num_kv_heads,
                  kv_head, copy_first, piece);
  };
  issue(0, chunk_first, 0);
  cp_async_commit();
  issue(0, chunk_first, 1);
  cp_async_commit();
  if (chunk_first < chunk_last) {
    load_blocks<T>(blocks, table, p.block_table_stride, p.block_size,
                   split_begin + (chunk_first + 1) * T::kChunk, copy_first);
  }
  allow_dependent_grid();

  // Query rows, pre-scaled so that scores are in the log2 domain (exp2f below).
  float q[GT][8];
  const float q_scale = p.softmax_scale * kLog2e;
#pragma unroll
  for (int h = 0; h < GT; ++h) {
    if (h < heads_here && active) {
      KvFormat<DType::bf16>::to_float(
          load_raw8<DType::bf16>(p.q + static_cast<int64_t>(token) * p.q_row_stride +
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

  for (int chunk = chunk_first; chunk <= chunk_last; ++chunk) {
    const int stage = (chunk - chunk_first) & 1;
    // The next chunk's copies go to the other stage (free since the last barrier of the
    // previous pass); empty groups on the last chunk keep the group counting uniform.
    const bool more = chunk < chunk_last;
    if (more) issue(stage ^ 1, chunk + 1, 0);
    cp_async_commit();
    if (more) issue(stage ^ 1, chunk + 1, 1);
    cp_async_commit();
    if (chunk + 1 < chunk_last) {
      load_blocks<T>(blocks, table, p.block_table_stride, p.block_size,
                     split_begin + (chunk + 2) * T::kChunk, copy_first);
    }
    const int c0 = split_begin + chunk * T::kChunk;
    const int n = min(T::kChunk, end - c0);  // rows [0, n) lie before the split's end
    const int lo = max(0, begin - c0);       // rows [0, lo) lie before the window: masked
    const unsigned char* s_k = smem + (2 * stage) * kStageBytes;
    const unsigned char* s_v = smem + (2 * stage + 1) * kStageBytes;
    const float* s_ks = s_scale + (2 * stage) * T::kScales;
    const float* s_vs = s_scale + (2 * stage + 1) * T::kScales;
    cp_async_wait<3>();  // this chunk's keys have landed (its values and the next chunk may not)
    __syncthreads();

    // Scores: each row's partial dot products summed over its kLanes threads by one
    // reduce-scatter per kUnroll rows (N − 1 shuffles for N values instead of N log2(kLanes)).
    for (int r0 = 0; r0 < n; r0 += T::kRows * kUnroll) {
      constexpr int kValues = kUnroll * GT;
      float dots[kValues];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int r = r0 + u * T::kRows + row;  // < kChunk; rows past n are not written
        float k[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        if (active) {
          Raw8 raw;
          load_shared(raw, s_k + r * T::kRowBytes + part * 8 * Fmt::kBytes);
          Fmt::to_float(raw, k);
        }
#pragma unroll
        for (int h = 0; h < GT; ++h) {
          float d = 0.0f;
#pragma unroll
          for (int i = 0; i < 8; ++i) d = fmaf(q[h][i], k[i], d);
          dots[u * GT + h] = d;
        }
      }
      constexpr int kKept = kValues >= T::kLanes ? kValues / T::kLanes : 1;
      float sums[kKept];
      int first_index = 0;
      reduce_scatter<kValues, T::kLanes / 2>(dots, part, sums, first_index);
      // With fewer values than lanes, kLanes / kValues lanes hold each sum: the lowest writes.
      if (kValues >= T::kLanes || (part & (T::kLanes / kValues - 1)) == 0) {
#pragma unroll
        for (int j = 0; j < kKept; ++j) {
          const int index = first_index + j;
          const int r = r0 + (index / GT) * T::kRows + row;
          if (r < n) {
            float score = sums[j];
            if constexpr (Fmt::kQuantized) score *= s_ks[r];
            s_score[(index % GT) * T::kChunk + r] = r >= lo ? score : -INFINITY;
          }
        }
      }
    }
    cp_async_wait<2>();  // this chunk's values have landed
    __syncthreads();

    // Online softmax over the chunk: warp w owns heads w, w + kWarps, ...
    for (int h = warp; h < GT; h += kWarps) {
      float* scores = s_score + h * T::kChunk;
      float mx = -INFINITY;
      for (int i = lane; i < n; i += 32) mx = fmaxf(mx, scores[i]);
#pragma unroll
      for (int off = 16; off > 0; off /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
      const float m_old = s_m[h];
      const float m_new = fmaxf(m_old, mx);  // finite: every chunk has a visible position
      float sum = 0.0f;
      for (int i = lane; i < n; i += 32) {
        const float e = exp2f(scores[i] - m_new);
        scores[i] = e;
        sum += e;
      }
#pragma unroll
      for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
      __syncwarp();
      if (lane == 0) {
        const float alpha = exp2f(m_old - m_new);  // 0 on the first chunk (m_old = -inf)
        s_alpha[h] = alpha;
        s_l[h] = s_l[h] * alpha + sum;
        s_m[h] = m_new;
      }
    }
    __syncthreads();

    // Values: each thread accumulates its 8 elements over its rows; a row's scale folds into
    // its softmax weight. Rows before the window were zero-filled and weigh zero.
#pragma unroll
    for (int h = 0; h < GT; ++h) {
      const float alpha = s_alpha[h];
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[h][i] *= alpha;
    }
    for (int r0 = 0; r0 < n; r0 += T::kRows * kUnroll) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int r = r0 + u * T::kRows + row;
        if (r < n && active) {
          Raw8 raw;
          load_shared(raw, s_v + r * T::kRowBytes + part * 8 * Fmt::kBytes);
          float v[8];
          Fmt::to_float(raw, v);
          float row_scale = 1.0f;
          if constexpr (Fmt::kQuantized) row_scale = s_vs[r];
#pragma unroll
          for (int h = 0; h < GT; ++h) {
            const float w = s_score[h * T::kChunk + r] * row_scale;
#pragma unroll
            for (int i = 0; i < 8; ++i) acc[h][i] = fmaf(w, v[i], acc[h][i]);
          }
        }
      }
    }
    __syncthreads();  // every thread is done with this stage and the scores
  }
  cp_async_wait<0>();  // (only empty groups can remain)

  // Sum the rows' partial outputs: first the rows of a warp (lanes kLanes apart), then the warps
  // through shared memory (over the stages, free now).
  float* s_acc = reinterpret_cast<float*>(smem);  // [kWarps][GT][D]
#pragma unroll
  for (int h = 0; h < GT; ++h) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
#pragma unroll
      for (int off = T::kLanes; off < 32; off *= 2) {
        acc[h][i] += __shfl_xor_sync(0xffffffffu, acc[h][i], off);
      }
    }
  }
  if (lane < T::kLanes && active) {
#pragma unroll
    for (int h = 0; h < GT; ++h) {
#pragma unroll
      for (int i = 0; i < 8; ++i) s_acc[(warp * GT + h) * D + part * 8 + i] = acc[h][i];
    }
  }
  __syncthreads();
  for (int i = tid; i < heads_here * D; i += kThreads) {
    const int h = i / D;
    const int d = i % D;
    float o = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) o += s_acc[(w * GT + h) * D + d];
    write_split_element<D>(a, token, seq, head0 + h, split, d, o / s_l[h], s_m[h], s_l[h]);
  }
}

// out = Σ_s w_s o_s / Σ_s w_s with w_s = l_s 2^(m_s − M): each split's normalized output weighted
// by its share of the softmax denominator, folded in split order, kCombineUnroll splits at a time
// with a running maximum (so the result does not depend on timing). One CTA per (head,
// sequence), a thread per element; a group's partials load together, and in a decode batch the
// sequence's token is looked up in the same trip (partials are indexed by sequence).
template <int D>
__global__ void __launch_bounds__(D) combine_kernel(const DecodeArgs a) {
  wait_for_prerequisite_grid();
  allow_dependent_grid();
  const PagedAttentionParams& p = a.p;
  const int head = blockIdx.x;
  const int seq = blockIdx.y;
  const int d = threadIdx.x;
  const int token = p.query_start[seq];
  const int token_end = p.query_start[seq + 1];
  if (!a.every_sequence_single && token_end - token != 1) return;
  const int64_t base = (static_cast<int64_t>(seq) * p.num_heads + head) * a.num_splits;
  float m = -INFINITY, l = 0.0f, o = 0.0f;
  for (int s0 = 0; s0 < a.num_splits; s0 += kCombineUnroll) {
    float2 ml[kCombineUnroll];
    float part[kCombineUnroll];
#pragma unroll
    for (int j = 0; j < kCombineUnroll; ++j) {
      const int s = s0 + j;
      ml[j] = s < a.num_splits ? a.partial_ml[base + s] : make_float2(-INFINITY, 0.0f);
      part[j] = s < a.num_splits ? a.partial_out[(base + s) * D + d] : 0.0f;
    }
    // The group's maximum first, so that its weights are independent of one another (a short
    // chain of dependent instructions); empty splits, (-inf, 0), weigh nothing.
    float m_group = m;
#pragma unroll
    for (int j = 0; j < kCombineUnroll; ++j) {
      if (ml[j].y > 0.0f) m_group = fmaxf(m_group, ml[j].x);
    }
    if (m_group == -INFINITY) continue;     // nothing in this group nor before it
    const float keep = exp2f(m - m_group);  // 0 while m = -inf
    o *= keep;
    l *= keep;
    m = m_group;
#pragma unroll
    for (int j = 0; j < kCombineUnroll; ++j) {
      const float w = ml[j].y > 0.0f ? ml[j].y * exp2f(ml[j].x - m) : 0.0f;
      o = fmaf(w, part[j], o);
      l += w;
    }
  }
  if (token_end - token != 1) return;
  p.out[(static_cast<int64_t>(token) * p.num_heads + head) * D + d] =
      __float2bfloat16(l > 0.0f ? o / l : 0.0f);
}

template <int D, int GT, DType F>
void launch(const DecodeArgs& a, bool programmatic, cudaStream_t stream) {
  using T = Tile<D, GT, F>;
  // Over 48 KB of shared memory needs the kernel's consent, and the largest carveout lets two or
  // three CTAs share an SM; given once (host-side attributes, fine during graph capture).
  static std::atomic<uint64_t> configured{0};
  once_per_device(configured, [] {
    INFERLAB_CUDA_CHECK(cudaFuncSetAttribute(decode_kernel<D, GT, F>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(T::kSmemBytes)));
    INFERLAB_CUDA_CHECK(cudaFuncSetAttribute(decode_kernel<D, GT, F>,
                                             cudaFuncAttributePreferredSharedMemoryCarveout,
                                             cudaSharedmemCarveoutMaxShared));
  });
  const int head_tiles = (a.group + GT - 1) / GT;
  const dim3 grid(static_cast<unsigned>(a.p.num_kv_heads * head_tiles),
                  static_cast<unsigned>(a.p.num_seqs), static_cast<unsigned>(a.num_splits));
  launch_kernel(decode_kernel<D, GT, F>, grid, dim3(kThreads), T::kSmemBytes, programmatic, stream,
                a);
}

template <int D, DType F>
void launch_tile(const DecodeArgs& a, bool programmatic, cudaStream_t stream) {
  // The smallest tile of 1, 2, 4 or 8 heads that holds the group (larger groups take several).
  if (a.group == 1) return launch<D, 1, F>(a, programmatic, stream);
  if (a.group == 2) return launch<D, 2, F>(a, programmatic, stream);
  if (a.group <= 4) return launch<D, 4, F>(a, programmatic, stream);
  return launch<D, 8, F>(a, programmatic, stream);
}

template <int D>
void launch_format(const DecodeArgs& a, bool programmatic, cudaStream_t stream) {
  switch (a.p.cache.format) {
    case DType::bf16:
      return launch_tile<D, DType::bf16>(a, programmatic, stream);
    case DType::int8:
      return launch_tile<D, DType::int8>(a, programmatic, stream);
    case DType::fp8:
      return launch_tile<D, DType::fp8>(a, programmatic, stream);
    default:
      throw std::invalid_argument("paged_attention: the cache must be bf16, int8 or fp8");
  }
}

}  // namespace

void launch_decode(const PagedAttentionParams& p, int num_splits, int partition, bool streamed,
                   bool programmatic, cudaStream_t stream) {
  DecodeArgs a;
  a.p = p;
  a.group = p.num_heads / p.num_kv_heads;
  a.num_splits = num_splits;
  a.partition = partition;
  a.partial_out = static_cast<float*>(p.workspace);
  // The (max, sum) pairs follow the outputs; that offset is a multiple of 8 bytes.
  const size_t outputs = static_cast<size_t>(p.num_seqs) * p.num_heads * num_splits * p.head_dim;
  a.partial_ml = num_splits > 1 ? reinterpret_cast<float2*>(a.partial_out + outputs) : nullptr;
  a.every_sequence_single = p.max_query_len == 1 && p.num_tokens == p.num_seqs;
  a.cache_before_wait = p.table_rows == nullptr && p.cache_before_wait;
  a.block_shift = -1;
  for (int shift = 0; shift < 31; ++shift) {
    if (p.block_size == 1 << shift) a.block_shift = shift;
  }
  with_head_dim(p.head_dim, [&](auto head_dim) {
    constexpr int D = decltype(head_dim)::value;
    if (streamed) {
      launch_stream_decode(a, programmatic, stream);
    } else {
      launch_format<D>(a, programmatic, stream);
    }
    if (num_splits > 1) {
      const dim3 grid(static_cast<unsigned>(p.num_heads), static_cast<unsigned>(p.num_seqs));
      launch_kernel(combine_kernel<D>, grid, dim3(D), 0, programmatic, stream, a);
    }
  });
}

}  // namespace inferlab::engine::cuda::detail
