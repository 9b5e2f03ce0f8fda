// Tiled causal attention over the paged KV cache for prefill and mixed batches (FlashAttention-2
// style): one CTA per (128-query tile of a sequence, query head), eight warps of 16 query rows.
// Key and value tiles of 64 positions are gathered through the block table into shared memory
// with cp.async (the next tile's keys load while this tile's values are used, and the reverse);
// S = Q Kᵀ and O += P V run on the tensor cores (mma.sync m16n8k16, bf16 in, fp32 accumulate),
// softmax is online in fp32 registers. Q stays in registers for the whole CTA.
#include <cuda_bf16.h>

#include <cstdint>
#include <stdexcept>

#include "engine/cuda/attention_kernels.hpp"
#include "engine/cuda/cuda_check.hpp"

namespace inferlab::engine::cuda::detail {
namespace {

// Eight warps share each key/value tile (measured on an H100 at 2048 tokens, d 128: 114 TFLOP/s
// against 96 with four warps and 64-query tiles).
constexpr int kWarps = 8;
constexpr int kBM = 16 * kWarps;  // queries per CTA (16 per warp)
constexpr int kBN = 64;           // keys per tile
constexpr int kThreads = 32 * kWarps;
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global → shared; src_bytes 0 fills zeros without reading.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)),
               "l"(__cvta_generic_to_global(src)), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
// Waits until at most `pending` of this thread's committed groups are still in flight.
template <int pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
}

// D (16×8, fp32) += A (16×16 bf16, row-major fragment) · B (16×8 bf16, column fragment).
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four 8×8 bf16 matrices, transposed on the way: the B fragments of P·V straight from the
// row-major value tile.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p))
               : "memory");
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x (low half) = lo
  return *reinterpret_cast<const uint32_t*>(&v);
}

__device__ __forceinline__ uint32_t load_u32(const __nv_bfloat16* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

// Gathers positions [start, start + kBN) of one KV head into a padded shared tile; positions at
// or past `limit` (beyond every query of the tile, possibly beyond the context) become zeros, so
// the block table is read only inside the sequence.
template <int D, int kStride>
__device__ __forceinline__ void load_tile(__nv_bfloat16* tile, const __nv_bfloat16* cache,
                                          const int32_t* table, int block_size, int64_t slot_stride,
                                          int kv_head, int start, int limit) {
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
}

template <int D>
__global__ void __launch_bounds__(kThreads) prefill_kernel(const PagedAttentionParams p) {
  // Rows padded by 16 bytes: the fragment loads of 8 rows × 4 words (and ldmatrix's 8 rows of
  // 16 bytes) then fall in distinct banks.
  constexpr int kStride = D + 8;
  constexpr int kKSteps = D / 16;   // k-steps of Q·Kᵀ
  constexpr int kDTiles = D / 8;    // n-tiles of the output
  constexpr int kNTiles = kBN / 8;  // n-tiles of the scores
  __shared__ __align__(128) __nv_bfloat16 s_k[kBN * kStride];
  __shared__ __align__(128) __nv_bfloat16 s_v[kBN * kStride];

  // Heads vary fastest and query tiles run last to first, so the CTAs launched first are the
  // longest (the causal tail then holds only short ones).
  const int seq = blockIdx.z;
  const int head = blockIdx.x;
  const int q_tile = static_cast<int>(gridDim.y - 1 - blockIdx.y);
  const int q_begin = p.query_start[seq];
  const int qlen = p.query_start[seq + 1] - q_begin;
  const int q0 = q_tile * kBM;
  if (q0 >= qlen) return;
  const int ctx = p.context_lens[seq];
  const int prefix = ctx - qlen;  // cached positions before the new tokens
  const int kv_head = head / (p.num_heads / p.num_kv_heads);
  const int window = p.sliding_window;
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int g = lane / 4;    // fragment row (and B column)
  const int tig = lane % 4;  // thread in group: fragment column pair

  // Keys any query of the tile may see: [kv_begin, kv_end).
  const int last_row = min(q0 + kBM, qlen) - 1;
  const int kv_end = prefix + last_row + 1;
  const int kv_begin = window > 0 ? max(0, prefix + q0 - window + 1) : 0;
  const int tile0 = kv_begin / kBN * kBN;
  const int num_tiles = (kv_end - tile0 + kBN - 1) / kBN;

  // This thread's two query rows (g and g + 8 of its warp's 16); rows past the sequence's new
  // tokens borrow the last row's position so their softmax stays finite, and are not written.
  const int row_a = q0 + warp * 16 + g;
  const int row_b = row_a + 8;
  const int pos_a = prefix + min(row_a, qlen - 1);
  const int pos_b = prefix + min(row_b, qlen - 1);

  // Q as A fragments: a0 (row g, cols 2t..2t+1), a1 (row g+8), a2 (row g, cols +8), a3 (row g+8).
  uint32_t qf[kKSteps][4];
  {
    const __nv_bfloat16* qa =
        p.q + static_cast<int64_t>(q_begin + row_a) * p.q_row_stride + head * D + tig * 2;
    const __nv_bfloat16* qb = qa + 8 * p.q_row_stride;
    const bool ok_a = row_a < qlen;
    const bool ok_b = row_b < qlen;
#pragma unroll
    for (int k = 0; k < kKSteps; ++k) {
      qf[k][0] = ok_a ? load_u32(qa + k * 16) : 0u;
      qf[k][1] = ok_b ? load_u32(qb + k * 16) : 0u;
      qf[k][2] = ok_a ? load_u32(qa + k * 16 + 8) : 0u;
      qf[k][3] = ok_b ? load_u32(qb + k * 16 + 8) : 0u;
    }
  }

  float o[kDTiles][4];
#pragma unroll
  for (int j = 0; j < kDTiles; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY};  // running max of rows a, b (log2 domain)
  float l[2] = {0.0f, 0.0f};            // this thread's share of the running sums
  const float scale = p.softmax_scale * kLog2e;

  const int32_t* table = p.block_tables + static_cast<int64_t>(seq) * p.block_table_stride;
  const int64_t slot_stride = static_cast<int64_t>(p.num_kv_heads) * D;
  load_tile<D, kStride>(s_k, p.k_cache, table, p.block_size, slot_stride, kv_head, tile0, kv_end);
  cp_async_commit();
  load_tile<D, kStride>(s_v, p.v_cache, table, p.block_size, slot_stride, kv_head, tile0, kv_end);
  cp_async_commit();

  for (int t = 0; t < num_tiles; ++t) {
    const int ks = tile0 + t * kBN;
    cp_async_wait<1>();  // in flight: this tile's keys, then its values; the keys have landed
    __syncthreads();

    float s[kNTiles][4];
#pragma unroll
    for (int n = 0; n < kNTiles; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int k = 0; k < kKSteps; ++k) {
#pragma unroll
      for (int n = 0; n < kNTiles; ++n) {
        // B = Kᵀ: b0 holds K[key n*8+g][dims k*16 + 2t, +1], b1 the same 8 dims further.
        const __nv_bfloat16* kr = s_k + (n * 8 + g) * kStride + k * 16 + tig * 2;
        mma_bf16(s[n], qf[k], load_u32(kr), load_u32(kr + 8));
      }
    }
    __syncthreads();  // every warp is done with s_k: the next keys may land there
    if (t + 1 < num_tiles) {
      load_tile<D, kStride>(s_k, p.k_cache, table, p.block_size, slot_stride, kv_head, ks + kBN,
                            kv_end);
    }
    cp_async_commit();  // (an empty group on the last tile keeps the counting uniform)

    // Mask only tiles that cross the causal diagonal or the window's edge of some row.
    const bool need_mask =
        !(ks + kBN - 1 <= prefix + q0 && (window <= 0 || ks > prefix + last_row - window));
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < kNTiles; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float v = s[n][e] * scale;
        if (need_mask) {
          const int key = ks + n * 8 + tig * 2 + (e & 1);
          const int pos = e < 2 ? pos_a : pos_b;
          if (key > pos || (window > 0 && key <= pos - window)) v = -INFINITY;
        }
        s[n][e] = v;
        tile_max[e / 2] = fmaxf(tile_max[e / 2], v);
      }
    }
    float base[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      // The four threads of a quad hold one row between them.
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
      const float m_new = fmaxf(m[r], tile_max[r]);
      base[r] = m_new == -INFINITY ? 0.0f : m_new;  // a row with nothing visible yet
      const float alpha = exp2f(m[r] - base[r]);    // 0 while m was -inf
      m[r] = m_new;
      l[r] *= alpha;
#pragma unroll
      for (int j = 0; j < kDTiles; ++j) {
        o[j][2 * r] *= alpha;
        o[j][2 * r + 1] *= alpha;
      }
    }
#pragma unroll
    for (int n = 0; n < kNTiles; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[n][e] = exp2f(s[n][e] - base[e / 2]);
        l[e / 2] += s[n][e];
      }
    }

    cp_async_wait<1>();  // in flight: the next keys; this tile's values have landed
    __syncthreads();
#pragma unroll
    for (int kc = 0; kc < kBN / 16; ++kc) {
      // P as an A fragment: the accumulator layout of score tiles 2kc and 2kc+1 is exactly it.
      const uint32_t pa[4] = {pack_bf16(s[2 * kc][0], s[2 * kc][1]),
                              pack_bf16(s[2 * kc][2], s[2 * kc][3]),
                              pack_bf16(s[2 * kc + 1][0], s[2 * kc + 1][1]),
                              pack_bf16(s[2 * kc + 1][2], s[2 * kc + 1][3])};
      // Lanes 0-7 address keys kc*16+0..7, lanes 8-15 keys +8..15 (b0, b1 of dims j*8..+7),
      // lanes 16-31 the same keys at dims (j+1)*8 (b0, b1 of the next output tile).
      const __nv_bfloat16* vr =
          s_v + (kc * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * kStride + (lane >> 4) * 8;
#pragma unroll
      for (int j = 0; j < kDTiles; j += 2) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, vr + j * 8);
        mma_bf16(o[j], pa, b[0], b[1]);
        mma_bf16(o[j + 1], pa, b[2], b[3]);
      }
    }
    __syncthreads();  // every warp is done with s_v
    if (t + 1 < num_tiles) {
      load_tile<D, kStride>(s_v, p.v_cache, table, p.block_size, slot_stride, kv_head, ks + kBN,
                            kv_end);
    }
    cp_async_commit();
  }
  cp_async_wait<0>();

  // Every real row saw at least its own position, so its sum is positive.
  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    inv[r] = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
  }
  const int64_t out_stride = static_cast<int64_t>(p.num_heads) * D;
  __nv_bfloat16* out_a = p.out + static_cast<int64_t>(q_begin + row_a) * out_stride + head * D;
  __nv_bfloat16* out_b = out_a + 8 * out_stride;
#pragma unroll
  for (int j = 0; j < kDTiles; ++j) {
    const int col = j * 8 + tig * 2;
    if (row_a < qlen) {
      *reinterpret_cast<__nv_bfloat162*>(out_a + col) =
          __floats2bfloat162_rn(o[j][0] * inv[0], o[j][1] * inv[0]);
    }
    if (row_b < qlen) {
      *reinterpret_cast<__nv_bfloat162*>(out_b + col) =
          __floats2bfloat162_rn(o[j][2] * inv[1], o[j][3] * inv[1]);
    }
  }
}

template <int D>
void launch(const PagedAttentionParams& p, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(p.num_heads),
                  static_cast<unsigned>((p.max_query_len + kBM - 1) / kBM),
                  static_cast<unsigned>(p.num_seqs));
  prefill_kernel<D><<<grid, kThreads, 0, stream>>>(p);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_prefill(const PagedAttentionParams& p, cudaStream_t stream) {
  if (p.head_dim == 64) {
    launch<64>(p, stream);
  } else if (p.head_dim == 128) {
    launch<128>(p, stream);
  } else {
    throw std::invalid_argument("paged_attention: head_dim must be 64 or 128");
  }
}

}  // namespace inferlab::engine::cuda::detail
