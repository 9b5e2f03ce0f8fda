// Tiled causal attention over the paged KV cache for prefill and mixed batches (FlashAttention-2
// style): one CTA per (query tile of a sequence, query head), eight warps of 16 or 32 query rows.
// The query tile sits in shared memory for the whole CTA; key and value tiles of 64 positions
// are gathered through the block table into shared memory with cp.async (the next tile's keys
// load while this tile's values are used, and the reverse). S = Q Kᵀ and O += P V run on the
// tensor cores (mma.sync m16n8k16 fed by ldmatrix, bf16 in, fp32 accumulate); the softmax is
// online, in fp32 registers.
//
// int8 and FP8 caches: the tensor cores take bf16, and every int8 and E4M3 value is exact in
// bf16, so the tiles hold the quantized values themselves, converted in shared memory, and the
// per-(slot, head) scales are applied where they are cheapest: a key's scale to its column of S
// (fp32, before the softmax), a value's scale to its column of P before P is rounded to bf16 for
// P·V (the rounding the bf16 cache has too). The raw bytes still arrive by cp.async, staged at
// the start of the very buffer their bf16 tile will occupy (a raw tile is half a bf16 one), and
// are converted in place when the bf16 path would find its tile landed: each thread reads its
// raw pieces into registers, a barrier, then writes them as bf16. That keeps the loads
// asynchronous (the copies of the next tile overlap this tile's math, as for bf16) and the shared
// memory per CTA unchanged except for two rows of scales, so as many CTAs fit on an SM; it costs
// two barriers and a pass over 8 KB of shared memory per tile, small beside the tile's mma work.
// Loading the bytes to registers and converting on the way (no cp.async) would have needed the
// next tile's bytes held in registers across the math, in a kernel already near its register
// limit.
#include <cuda_bf16.h>

#include <cstdint>
#include <stdexcept>

#include "engine/cuda/attention_device.cuh"
#include "engine/cuda/attention_kernels.hpp"
#include "engine/cuda/cuda_check.hpp"

namespace inferlab::engine::cuda::detail {
namespace {

constexpr int kBN = 64;  // keys per tile

// Gathers positions [start, start + kBN) of one KV head into a padded shared tile; positions at
// or past `limit` (beyond every query of the tile, possibly beyond the context) become zeros, so
// the block table is read only inside the sequence. int8/fp8: the raw bytes, packed [kBN][D] at
// the start of the tile's buffer (convert_tile makes them bf16), and the rows' scales.
template <int D, int kStride, int kThreads, DType F>
__device__ __forceinline__ void load_tile(__nv_bfloat16* tile, float* tile_scales,
                                          const void* cache_bytes, const float* scales,
                                          const int32_t* table, int block_size, int64_t slot_stride,
                                          int kv_head, int start, int limit) {
  if constexpr (F == DType::bf16) {
    const auto* cache = static_cast<const __nv_bfloat16*>(cache_bytes);
    constexpr int kPieces = D / 8;  // 16-byte pieces per row
#pragma unroll
    for (int i = 0; i < kBN * kPieces / kThreads; ++i) {
      const int c = static_cast<int>(threadIdx.x) + i * kThreads;
      const int r = c / kPieces;
      const int col = (c % kPieces) * 8;
      const int pos = start + r;
      const __nv_bfloat16* src = cache;
      int bytes = 0;
      if (pos < limit) {
        const int64_t slot =
            static_cast<int64_t>(table[pos / block_size]) * block_size + pos % block_size;
        src = cache + slot * slot_stride + static_cast<int64_t>(kv_head) * D + col;
        bytes = 16;
      }
      cp_async16(tile + r * kStride + col, src, bytes);
    }
  } else {
    const auto* cache = static_cast<const unsigned char*>(cache_bytes);
    auto* raw = reinterpret_cast<unsigned char*>(tile);
    constexpr int kPieces = D / 16;  // 16-byte pieces per row
    static_assert(kBN * kPieces % kThreads == 0, "whole copy steps");
#pragma unroll
    for (int i = 0; i < kBN * kPieces / kThreads; ++i) {
      const int c = static_cast<int>(threadIdx.x) + i * kThreads;
      const int r = c / kPieces;
      const int col = (c % kPieces) * 16;
      const int pos = start + r;
      const unsigned char* src = cache;
      int bytes = 0;
      if (pos < limit) {
        const int64_t slot =
            static_cast<int64_t>(table[pos / block_size]) * block_size + pos % block_size;
        src = cache + slot * slot_stride + static_cast<int64_t>(kv_head) * D + col;
        bytes = 16;
      }
      cp_async16(raw + c * 16, src, bytes);
    }
    if (threadIdx.x < kBN) {
      const int pos = start + static_cast<int>(threadIdx.x);
      const float* src = scales;
      int bytes = 0;
      if (pos < limit) {
        const int64_t slot =
            static_cast<int64_t>(table[pos / block_size]) * block_size + pos % block_size;
        src = scales + slot * (slot_stride / D) + kv_head;  // (slot, kv head)
        bytes = 4;
      }
      cp_async4(tile_scales + threadIdx.x, src, bytes);
    }
  }
}

// The raw int8/fp8 tile that load_tile staged (landed, and visible after a barrier) rewritten in
// place as the padded bf16 tile: every raw piece goes to registers, a barrier, then the bf16
// rows are written over them; a barrier again before anyone reads the tile.
template <int D, int kStride, int kThreads, DType F>
__device__ __forceinline__ void convert_tile(__nv_bfloat16* tile) {
  constexpr int kPieces = D / 16;
  constexpr int kPerThread = kBN * kPieces / kThreads;
  uint4 raw[kPerThread];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    raw[i] = reinterpret_cast<const uint4*>(tile)[threadIdx.x + i * kThreads];
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int c = static_cast<int>(threadIdx.x) + i * kThreads;
    const uint32_t words[4] = {raw[i].x, raw[i].y, raw[i].z, raw[i].w};
    float f[16];
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      if constexpr (F == DType::int8) {
        int8x4_to_float(words[w], f + 4 * w);
      } else {
        e4m3x4_to_float(words[w], f + 4 * w);
      }
    }
    uint4 out[2];
    uint32_t* packed = reinterpret_cast<uint32_t*>(out);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const __nv_bfloat162 pair = __floats2bfloat162_rn(f[2 * j], f[2 * j + 1]);  // exact
      packed[j] = *reinterpret_cast<const uint32_t*>(&pair);
    }
    __nv_bfloat16* dst = tile + (c / kPieces) * kStride + (c % kPieces) * 16;
    reinterpret_cast<uint4*>(dst)[0] = out[0];
    reinterpret_cast<uint4*>(dst)[1] = out[1];
  }
  __syncthreads();
}

// Rows padded by 16 bytes: ldmatrix's 8 rows of 16 bytes then fall in distinct banks.
template <int D>
constexpr int row_stride() {
  return D + 8;
}
// The query, key and value tiles; for int8/fp8 the key and value tiles' scales after them.
template <int D, int kBM, DType F>
constexpr int smem_bytes() {
  return (kBM + 2 * kBN) * row_stride<D>() * static_cast<int>(sizeof(__nv_bfloat16)) +
         (F == DType::bf16 ? 0 : 2 * kBN * static_cast<int>(sizeof(float)));
}

// kMTiles 16-row m-tiles per warp (each K or V fragment read from shared memory feeds kMTiles
// mma), kWarps warps: kBM = 16 kMTiles kWarps queries per CTA.
template <int D, int kMTiles, int kWarps, DType F>
__global__ void __launch_bounds__(32 * kWarps) prefill_kernel(const PagedAttentionParams p) {
  constexpr bool kQuantized = F != DType::bf16;
  constexpr int kBM = 16 * kMTiles * kWarps;
  constexpr int kThreads = 32 * kWarps;
  constexpr int kStride = row_stride<D>();
  constexpr int kKSteps = D / 16;   // k-steps of Q·Kᵀ
  constexpr int kDTiles = D / 8;    // n-tiles of the output
  constexpr int kNTiles = kBN / 8;  // n-tiles of the scores
  extern __shared__ __align__(128) unsigned char smem[];
  __nv_bfloat16* s_q = reinterpret_cast<__nv_bfloat16*>(smem);      // [kBM][kStride]
  __nv_bfloat16* s_k = s_q + kBM * kStride;                         // [kBN][kStride]
  __nv_bfloat16* s_v = s_k + kBN * kStride;                         // [kBN][kStride]
  float* s_kscale = reinterpret_cast<float*>(s_v + kBN * kStride);  // [kBN], int8/fp8 only
  float* s_vscale = s_kscale + kBN;                                 // [kBN], int8/fp8 only

  // Heads vary fastest and query tiles run last to first, so the CTAs launched first are the
  // longest (the causal tail then holds only short ones).
  const int seq = blockIdx.z;
  const int head = blockIdx.x;
  const int q_tile = static_cast<int>(gridDim.y - 1 - blockIdx.y);
  const int q_begin = p.query_start[seq];
  const int qlen = p.query_start[seq + 1] - q_begin;
  if (p.skip_single_queries && qlen == 1) return;  // the decode kernel has it
  const int q0 = q_tile * kBM;
  if (q0 >= qlen) return;
  const int ctx = p.context_lens[seq];
  const int prefix = ctx - qlen;  // cached positions before the new tokens
  const int kv_head = head / (p.num_heads / p.num_kv_heads);
  const int window = p.sliding_window;
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int g = lane / 4;    // accumulator row (and B column)
  const int tig = lane % 4;  // thread in group: accumulator column pair

  // Keys any query of the tile may see: [kv_begin, kv_end).
  const int last_row = min(q0 + kBM, qlen) - 1;
  const int kv_end = prefix + last_row + 1;
  const int kv_begin = window > 0 ? max(0, prefix + q0 - window + 1) : 0;
  const int tile0 = kv_begin / kBN * kBN;
  const int num_tiles = (kv_end - tile0 + kBN - 1) / kBN;

  // This thread's rows: g and g + 8 of each of its warp's m-tiles. Rows past the sequence's new
  // tokens borrow the last row's position so their softmax stays finite, and are not written.
  const int warp_row = q0 + warp * 16 * kMTiles;
  int pos[kMTiles][2];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) pos[mt][r] = prefix + min(warp_row + mt * 16 + r * 8 + g, qlen - 1);
  }

  // The query tile, zeros past the new tokens: the first cp.async group.
  {
    constexpr int kPieces = D / 8;
    const __nv_bfloat16* q = p.q + static_cast<int64_t>(q_begin + q0) * p.q_row_stride + head * D;
#pragma unroll
    for (int i = 0; i < kBM * kPieces / kThreads; ++i) {
      const int c = tid + i * kThreads;
      const int r = c / kPieces;
      const int col = (c % kPieces) * 8;
      const bool ok = q0 + r < qlen;
      cp_async16(s_q + r * kStride + col,
                 ok ? q + static_cast<int64_t>(r) * p.q_row_stride + col : p.q, ok ? 16 : 0);
    }
    cp_async_commit();
  }

  float o[kMTiles][kDTiles][4];
  float m[kMTiles][2], l[kMTiles][2];  // running max (log2 domain), this thread's share of sums
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
    for (int j = 0; j < kDTiles; ++j) o[mt][j][0] = o[mt][j][1] = o[mt][j][2] = o[mt][j][3] = 0.0f;
    m[mt][0] = m[mt][1] = -INFINITY;
    l[mt][0] = l[mt][1] = 0.0f;
  }
  const float scale = p.softmax_scale * kLog2e;

  const int32_t* table = p.block_tables + static_cast<int64_t>(seq) * p.block_table_stride;
  const int64_t slot_stride = static_cast<int64_t>(p.num_kv_heads) * D;
  load_tile<D, kStride, kThreads, F>(s_k, s_kscale, p.cache.k, p.cache.k_scale, table, p.block_size,
                                     slot_stride, kv_head, tile0, kv_end);
  cp_async_commit();
  load_tile<D, kStride, kThreads, F>(s_v, s_vscale, p.cache.v, p.cache.v_scale, table, p.block_size,
                                     slot_stride, kv_head, tile0, kv_end);
  cp_async_commit();

  // ldmatrix addresses. Q (A, 16×16 per m-tile and k-step): lanes 0-15 rows 0-15 at column 0,
  // lanes 16-31 the same rows at column 8 (registers a0..a3 in the mma's order). Kᵀ (B, two
  // n-tiles per x4): lanes 0-7 keys 0-7 at dims 0-7 (b0), 8-15 the same keys at dims 8-15 (b1),
  // 16-31 keys 8-15 likewise. V (B, transposed): lanes 0-7 keys 0-7 (b0), 8-15 keys 8-15 (b1),
  // 16-31 the same keys at the next 8 dims.
  const __nv_bfloat16* q_frag =
      s_q + (warp * 16 * kMTiles + (lane & 15)) * kStride + (lane >> 4) * 8;
  const __nv_bfloat16* k_frag =
      s_k + ((lane & 7) + (lane >> 4) * 8) * kStride + ((lane >> 3) & 1) * 8;
  const __nv_bfloat16* v_frag =
      s_v + ((lane & 7) + ((lane >> 3) & 1) * 8) * kStride + (lane >> 4) * 8;

  for (int t = 0; t < num_tiles; ++t) {
    const int ks = tile0 + t * kBN;
    cp_async_wait<1>();  // in flight: at most this tile's values; the queries and keys have landed
    __syncthreads();
    if constexpr (kQuantized) convert_tile<D, kStride, kThreads, F>(s_k);

    float s[kMTiles][kNTiles][4];
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int n = 0; n < kNTiles; ++n)
        s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.0f;
    }
#pragma unroll
    for (int k = 0; k < kKSteps; ++k) {
      uint32_t qa[kMTiles][4];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) ldmatrix_x4(qa[mt], q_frag + mt * 16 * kStride + k * 16);
#pragma unroll
      for (int n = 0; n < kNTiles; n += 2) {
        uint32_t b[4];
        ldmatrix_x4(b, k_frag + n * 8 * kStride + k * 16);
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
          mma_bf16(s[mt][n], qa[mt], b[0], b[1]);
          mma_bf16(s[mt][n + 1], qa[mt], b[2], b[3]);
        }
      }
    }
    if constexpr (kQuantized) {
      // Each key's scale on its column of S, before the next keys' scales land over them.
#pragma unroll
      for (int n = 0; n < kNTiles; ++n) {
        const float2 key_scale = *reinterpret_cast<const float2*>(s_kscale + n * 8 + tig * 2);
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
          s[mt][n][0] *= key_scale.x;
          s[mt][n][1] *= key_scale.y;
          s[mt][n][2] *= key_scale.x;
          s[mt][n][3] *= key_scale.y;
        }
      }
    }
    __syncthreads();  // every warp is done with s_k: the next keys may land there
    if (t + 1 < num_tiles) {
      load_tile<D, kStride, kThreads, F>(s_k, s_kscale, p.cache.k, p.cache.k_scale, table,
                                         p.block_size, slot_stride, kv_head, ks + kBN, kv_end);
    }
    cp_async_commit();  // (an empty group on the last tile keeps the counting uniform)

    // Mask only tiles that cross the causal diagonal or the window's edge of some row.
    const bool need_mask =
        !(ks + kBN - 1 <= prefix + q0 && (window <= 0 || ks > prefix + last_row - window));
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
      float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int n = 0; n < kNTiles; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float v = s[mt][n][e] * scale;
          if (need_mask) {
            const int key = ks + n * 8 + tig * 2 + (e & 1);
            const int at = pos[mt][e / 2];
            if (key > at || (window > 0 && key <= at - window)) v = -INFINITY;
          }
          s[mt][n][e] = v;
          tile_max[e / 2] = fmaxf(tile_max[e / 2], v);
        }
      }
      float base[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        // The four threads of a quad hold one row between them.
        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
        const float m_new = fmaxf(m[mt][r], tile_max[r]);
        base[r] = m_new == -INFINITY ? 0.0f : m_new;    // a row with nothing visible yet
        const float alpha = exp2f(m[mt][r] - base[r]);  // 0 while m was -inf
        m[mt][r] = m_new;
        l[mt][r] *= alpha;
#pragma unroll
        for (int j = 0; j < kDTiles; ++j) {
          o[mt][j][2 * r] *= alpha;
          o[mt][j][2 * r + 1] *= alpha;
        }
      }
#pragma unroll
      for (int n = 0; n < kNTiles; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[mt][n][e] = exp2f(s[mt][n][e] - base[e / 2]);
          l[mt][e / 2] += s[mt][n][e];
        }
      }
    }

    cp_async_wait<1>();  // in flight: the next keys; this tile's values have landed
    __syncthreads();
    if constexpr (kQuantized) convert_tile<D, kStride, kThreads, F>(s_v);
#pragma unroll
    for (int kc = 0; kc < kBN / 16; ++kc) {
      // P as A fragments: the accumulator layout of score tiles 2kc and 2kc+1 is exactly it.
      // int8/fp8: each value's scale on its column of P first (weights and scales are both
      // positive, so only the rounding to bf16 changes, as in the bf16 path).
      float2 vs0 = make_float2(1.0f, 1.0f), vs1 = vs0;
      if constexpr (kQuantized) {
        vs0 = *reinterpret_cast<const float2*>(s_vscale + 2 * kc * 8 + tig * 2);
        vs1 = *reinterpret_cast<const float2*>(s_vscale + (2 * kc + 1) * 8 + tig * 2);
      }
      uint32_t pa[kMTiles][4];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        pa[mt][0] = pack_bf16(s[mt][2 * kc][0] * vs0.x, s[mt][2 * kc][1] * vs0.y);
        pa[mt][1] = pack_bf16(s[mt][2 * kc][2] * vs0.x, s[mt][2 * kc][3] * vs0.y);
        pa[mt][2] = pack_bf16(s[mt][2 * kc + 1][0] * vs1.x, s[mt][2 * kc + 1][1] * vs1.y);
        pa[mt][3] = pack_bf16(s[mt][2 * kc + 1][2] * vs1.x, s[mt][2 * kc + 1][3] * vs1.y);
      }
#pragma unroll
      for (int j = 0; j < kDTiles; j += 2) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, v_frag + kc * 16 * kStride + j * 8);
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
          mma_bf16(o[mt][j], pa[mt], b[0], b[1]);
          mma_bf16(o[mt][j + 1], pa[mt], b[2], b[3]);
        }
      }
    }
    __syncthreads();  // every warp is done with s_v
    if (t + 1 < num_tiles) {
      load_tile<D, kStride, kThreads, F>(s_v, s_vscale, p.cache.v, p.cache.v_scale, table,
                                         p.block_size, slot_stride, kv_head, ks + kBN, kv_end);
    }
    cp_async_commit();
  }
  cp_async_wait<0>();

  // Every real row saw at least its own position, so its sum is positive.
  const int64_t out_stride = static_cast<int64_t>(p.num_heads) * D;
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float sum = l[mt][r];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
      const int row = warp_row + mt * 16 + r * 8 + g;
      if (row >= qlen) continue;
      __nv_bfloat16* out = p.out + static_cast<int64_t>(q_begin + row) * out_stride + head * D;
#pragma unroll
      for (int j = 0; j < kDTiles; ++j) {
        *reinterpret_cast<__nv_bfloat162*>(out + j * 8 + tig * 2) =
            __floats2bfloat162_rn(o[mt][j][2 * r] * inv, o[mt][j][2 * r + 1] * inv);
      }
    }
  }
}

template <int D, int kMTiles, int kWarps, DType F>
void launch(const PagedAttentionParams& p, cudaStream_t stream) {
  constexpr int kBM = 16 * kMTiles * kWarps;
  constexpr int kSmem = smem_bytes<D, kBM, F>();
  // Over 48 KB of shared memory needs the kernel's consent, given once (a host-side attribute,
  // fine during graph capture).
  static std::atomic<uint64_t> opted_in{0};
  once_per_device(opted_in, [] {
    INFERLAB_CUDA_CHECK(cudaFuncSetAttribute(prefill_kernel<D, kMTiles, kWarps, F>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  });
  const dim3 grid(static_cast<unsigned>(p.num_heads),
                  static_cast<unsigned>((p.max_query_len + kBM - 1) / kBM),
                  static_cast<unsigned>(p.num_seqs));
  prefill_kernel<D, kMTiles, kWarps, F><<<grid, 32 * kWarps, kSmem, stream>>>(p);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

// 256-query CTAs (two m-tiles per warp, eight warps) when they alone give every SM one;
// otherwise 128-query CTAs (one m-tile per warp) for more of them. Measured on an H100, Llama 3
// 8B shapes: 178 against 137 TFLOP/s at 2048 tokens, 45 against 63 at 512.
// Head_dim 192 and 256: 128-query CTAs only. Two m-tiles would hold 2 × 24 (32) × 4 fp32
// accumulators of the output per thread, 192 (256) registers before the scores; one m-tile holds
// 96 (128), within the 255 a thread of a 256-thread CTA may have. Shared memory: (128 queries +
// 64 keys + 64 values) × (D + 8) bf16 = 102 KB at 192, 135 KB at 256 (one or two CTAs per SM).
template <int D, DType F>
void launch_sized(const PagedAttentionParams& p, int sm_count, cudaStream_t stream) {
  if constexpr (D > 128) {
    (void)sm_count;
    launch<D, 1, 8, F>(p, stream);
  } else {
    const int64_t big_ctas =
        int64_t{(p.max_query_len + 255) / 256} * p.num_heads * int64_t{p.num_seqs};
    if (big_ctas >= sm_count) {
      launch<D, 2, 8, F>(p, stream);
    } else {
      launch<D, 1, 8, F>(p, stream);
    }
  }
}

template <int D>
void launch_format(const PagedAttentionParams& p, int sm_count, cudaStream_t stream) {
  switch (p.cache.format) {
    case DType::bf16:
      return launch_sized<D, DType::bf16>(p, sm_count, stream);
    case DType::int8:
      return launch_sized<D, DType::int8>(p, sm_count, stream);
    case DType::fp8:
      return launch_sized<D, DType::fp8>(p, sm_count, stream);
    default:
      throw std::invalid_argument("paged_attention: the cache must be bf16, int8 or fp8");
  }
}

}  // namespace

void launch_prefill(const PagedAttentionParams& p, int sm_count, cudaStream_t stream) {
  with_head_dim(p.head_dim, [&](auto head_dim) {
    launch_format<decltype(head_dim)::value>(p, sm_count, stream);
  });
}

}  // namespace inferlab::engine::cuda::detail
