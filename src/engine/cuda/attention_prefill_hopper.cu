// Causal prefill attention over the paged KV cache on Hopper (sm_90a), FlashAttention-3 style.
//
// One CTA per (128-query tile of a sequence, query head), three warpgroups:
// - warpgroup 0 produces: its first warp issues the TMA loads, the query tile once and then every
//   128-key tile of K and of V (one load per cache page and 64-dim half of a row), two stages
//   deep; each stage completes on a "full" mbarrier (transaction bytes) and is refilled after its
//   "empty" mbarrier says both consumers are done with it. setmaxnreg lowers it to 40 registers.
// - warpgroups 1 and 2 consume, 64 query rows each (wgmma's M): S = Q·Kᵀ with both operands in
//   shared memory (K-major), the online softmax in fp32 registers (log2 domain), O += P·V with P
//   in registers and V in shared memory (MN-major: the instruction transposes it). 232 registers.
// Why warp specialization rather than one elected thread issuing TMA among computing warps: the
// loads never wait behind a consumer's math, and setmaxnreg moves the producer's registers to the
// consumers (S and O take 64 fp32 registers each, P 32), which a uniform 384-thread CTA (168
// registers per thread) could not hold without spilling.
//
// Shared tiles use the 128-byte swizzle, the layout TMA writes and the wgmma descriptors read:
// rows of 64 bf16 (128 B), 8-row atoms of 1 KB, 1 KB-aligned; a 128-dim row is split in two
// halves stored one after the other, [half][row][64].
//
// Paging: a 128-key tile is 128 / block_size whole pages (or a slice of one page when
// block_size > 128); the producer reads the block table (one lane per page) and loads only the
// pages holding keys the tile's queries may see. Rows past those keys in the last tile's V stage
// are zeroed before the consumers see it: the cache past a sequence's context is uninitialised
// memory, and a NaN there would survive P = 0 in P·V. (Stale K rows are harmless: their scores
// are replaced by -inf.)
#include <cuda.h>  // CUtensorMap and cuTensorMapEncodeTiled's types (the function comes from
                   // cudaGetDriverEntryPointByVersion: no link against libcuda)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/cuda/attention_hopper.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/hopper_ptx.cuh"

namespace inferlab::engine::cuda::detail {
namespace {

constexpr int kBM = 128;           // query rows per CTA
constexpr int kWgRows = 64;        // query rows per consumer warpgroup (wgmma's M)
constexpr int kBN = 128;           // keys per tile
constexpr int kStages = 2;         // K and V stages in shared memory
constexpr int kThreads = 384;      // producer warpgroup + two consumer warpgroups
constexpr int kRowBytes = 128;     // one row of a 128-byte swizzle atom
constexpr int kHalfDims = 64;      // bf16 in such a row
constexpr int kAtomBytes = 1024;   // 8 rows: the swizzle's period and required alignment
constexpr int kConsumerWarps = 8;  // arrivals that free a stage
constexpr int kProducerRegs = 40;  // 128 · 40 + 256 · 232 = 64512 of 65536 registers
constexpr int kConsumerRegs = 232;
constexpr float kLog2e = 1.4426950408889634f;
// A barrier wait longer than kWatchdogCycles (about 8 s) is a broken pipeline; a waiter checks
// whether another one already gave up every kWatchdogPollCycles (about 0.5 ms).
constexpr long long kWatchdogCycles = 1LL << 34;
constexpr long long kWatchdogPollCycles = 1LL << 20;

// Byte offsets in one CTA's shared memory, from a 1 KB-aligned base.
template <int D>
struct SmemLayout {
  static constexpr int kHalves = D / kHalfDims;
  static constexpr int kHalfTileBytes = kBN * kRowBytes;  // one half of a K or V stage
  static constexpr int kTileBytes = kHalves * kHalfTileBytes;
  static constexpr int kWgQBytes = kHalves * kWgRows * kRowBytes;  // [half][64 rows][128 B]
  static constexpr int kQ = 0;                                     // [warpgroup][half][row]
  static constexpr int kK = kQ + 2 * kWgQBytes;
  static constexpr int kV = kK + kStages * kTileBytes;
  static constexpr int kBarriers = kV + kStages * kTileBytes;
  static constexpr int kNumBarriers = 2 + 4 * kStages;
  static constexpr int kBytes = kBarriers + 8 * kNumBarriers;
  static constexpr int kAllocBytes = kBytes + kAtomBytes;  // slack to align the base
};
static_assert(SmemLayout<128>::kAllocBytes <= 227 * 1024, "over Hopper's shared memory per CTA");

// mbarrier indices: the query tile, the last V tile's loads (before its tail is zeroed), then per
// stage s: K full, V full, K empty, V empty at kBarFullK + s and so on.
constexpr int kBarQ = 0;
constexpr int kBarVTail = 1;
constexpr int kBarFullK = 2;
constexpr int kBarFullV = kBarFullK + kStages;
constexpr int kBarEmptyK = kBarFullV + kStages;
constexpr int kBarEmptyV = kBarEmptyK + kStages;

// What one CTA works on (uniform over the CTA).
struct CtaWork {
  int seq, head, kv_head;
  int q_begin, qlen, q0;  // the sequence's first token, new tokens, the tile's first row
  int prefix;             // cached positions before the new tokens
  int kv_begin, kv_end;   // keys any row of the tile may see
  int tile0, num_tiles;   // first key tile (multiple of kBN) and how many
};

// Where the first barrier wait that timed out was (mbar_wait_watched); read and cleared by
// hopper_prefill_watchdog().
__device__ HopperWatchdogReport g_watchdog;

#ifdef INFERLAB_HOPPER_DEVICE_CODE
using namespace hopper;

// Until the phase of parity `parity` of barrier `bar` has completed, or the watchdog fires.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  mbar_wait_watched(bar, parity, kWatchdogCycles, kWatchdogPollCycles, g_watchdog);
}

// The producer: warp 0 of warpgroup 0 (lane 0 issues, the warp looks pages up and zeroes).
template <int D>
__device__ __forceinline__ void produce(const CUtensorMap* q_map, const CUtensorMap* k_map,
                                        const CUtensorMap* v_map, const PagedAttentionParams& p,
                                        const CtaWork& w, unsigned char* smem, uint32_t base) {
  using L = SmemLayout<D>;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const uint32_t bars = base + L::kBarriers;
  if (lane == 0) {
    prefetch_tensor_map(q_map);
    prefetch_tensor_map(k_map);
    prefetch_tensor_map(v_map);
    // The query tile: 64 rows per consumer. A warpgroup whose rows all lie past the sequence's
    // new tokens loads warpgroup 0's rows instead (finite values it never writes out), so that
    // no box lies wholly outside the tensor.
    mbar_expect_tx(bars + 8 * kBarQ, 2 * L::kWgQBytes);
#pragma unroll
    for (int g = 0; g < 2; ++g) {
      const int first = w.q0 + g * kWgRows < w.qlen ? w.q0 + g * kWgRows : w.q0;
#pragma unroll
      for (int h = 0; h < L::kHalves; ++h) {
        tma_load_2d(base + L::kQ + g * L::kWgQBytes + h * kWgRows * kRowBytes, q_map,
                    w.head * D + h * kHalfDims, w.q_begin + first, bars + 8 * kBarQ);
      }
    }
  }
  const int block_size = p.block_size;
  const int piece = min(block_size, kBN);  // keys per load: a page, or a tile's slice of one
  const int pieces = kBN / piece;
  const uint32_t piece_bytes = static_cast<uint32_t>(piece) * D * 2;
  const int32_t* table = p.block_tables + static_cast<int64_t>(w.seq) * p.block_table_stride;
  for (int t = 0; t < w.num_tiles; ++t) {
    const int s = t % kStages;
    const uint32_t parity = static_cast<uint32_t>(t / kStages) & 1u;
    const int ks = w.tile0 + t * kBN;
    // Pieces starting at or past kv_end hold no visible key (only the last tile has such): not
    // loaded, and the block table is not read past the sequence's blocks.
    const int loaded = min(pieces, (w.kv_end - ks + piece - 1) / piece);
    int slot = 0;  // lane i: the cache slot of piece i's first key
    if (lane < loaded) {
      const int pos = ks + lane * piece;
      slot = table[pos / block_size] * block_size + pos % block_size;
    }
    const bool last = t + 1 == w.num_tiles;
#pragma unroll
    for (int kv = 0; kv < 2; ++kv) {
      const CUtensorMap* map = kv == 0 ? k_map : v_map;
      const uint32_t stage = base + (kv == 0 ? L::kK : L::kV) + s * L::kTileBytes;
      // The stage's previous tile (t - kStages) must be released by both consumers.
      if (t >= kStages)
        mbar_wait(bars + 8 * (kv == 0 ? (kBarEmptyK + s) : (kBarEmptyV + s)), parity ^ 1u);
      const uint32_t full = bars + 8 * (kv == 0 ? (kBarFullK + s) : (kBarFullV + s));
      const uint32_t bar = kv == 1 && last ? bars + 8 * kBarVTail : full;
      if (lane == 0) mbar_expect_tx(bar, static_cast<uint32_t>(loaded) * piece_bytes);
      for (int i = 0; i < loaded; ++i) {
        const int slot_i = __shfl_sync(0xffffffffu, slot, i);
        if (lane == 0) {
#pragma unroll
          for (int h = 0; h < L::kHalves; ++h) {
            tma_load_3d(stage + h * L::kHalfTileBytes + i * piece * kRowBytes, map, h * kHalfDims,
                        w.kv_head, slot_i, bar);
          }
        }
      }
      if (kv == 1 && last) {
        // Zero V rows [kv_end - ks, kBN) once the loads have landed (a whole 128-B row is the
        // same set of bytes in any swizzle), make the stores visible to the tensor cores' async
        // proxy, then release the stage to the consumers.
        mbar_wait(bars + 8 * kBarVTail, 0);
        const int first_zero = w.kv_end - ks;
        const int chunks = (kBN - first_zero) * (kRowBytes / 16);
#pragma unroll
        for (int h = 0; h < L::kHalves; ++h) {
          uint4* rows = reinterpret_cast<uint4*>(smem + L::kV + s * L::kTileBytes +
                                                 h * L::kHalfTileBytes + first_zero * kRowBytes);
          for (int c = lane; c < chunks; c += 32) rows[c] = make_uint4(0, 0, 0, 0);
        }
        fence_proxy_async();
        __syncwarp();
        if (lane == 0) mbar_arrive(full);
      }
    }
  }
}

// Masks tile `ks` where needed, updates the running max m and sum l of this thread's two rows,
// turns s into probabilities and returns in alpha the factor O must be rescaled by.
__device__ __forceinline__ void softmax_tile(float (&s)[kBN / 2], int ks, bool need_mask,
                                             const int (&pos)[2], int window, float scale,
                                             float (&m)[2], float (&l)[2], float (&alpha)[2]) {
  const int tig = static_cast<int>(threadIdx.x % 4);
  float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = e / 2;  // registers 0-1: row g, 2-3: row g + 8; columns 8j + 2·tig + (e & 1)
      float v = s[4 * j + e];
      if (need_mask) {
        const int key = ks + 8 * j + 2 * tig + (e & 1);
        if (key > pos[r] || (window > 0 && key <= pos[r] - window)) v = -INFINITY;
      }
      s[4 * j + e] = v;
      tile_max[r] = fmaxf(tile_max[r], v);
    }
  }
  float base[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    // The four threads of a quad hold a row between them.
    tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
    tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
    const float m_new = fmaxf(m[r], tile_max[r] * scale);  // scale > 0: max commutes with it
    base[r] = m_new == -INFINITY ? 0.0f : m_new;           // nothing visible yet in this row
    alpha[r] = fast_exp2(m[r] - base[r]);                  // 0 while m was -inf
    m[r] = m_new;
    l[r] *= alpha[r];
  }
#pragma unroll
  for (int i = 0; i < kBN / 2; ++i) {
    s[i] = fast_exp2(fmaf(s[i], scale, -base[(i / 2) % 2]));
    l[(i / 2) % 2] += s[i];
  }
}

// P as wgmma A fragments, straight from the S accumulator layout: k-step kc covers keys
// [16 kc, 16 kc + 16), i.e. accumulator registers 8 kc .. 8 kc + 7.
__device__ __forceinline__ void pack_p(const float (&s)[kBN / 2], uint32_t (&pa)[kBN / 16][4]) {
#pragma unroll
  for (int kc = 0; kc < kBN / 16; ++kc) {
#pragma unroll
    for (int i = 0; i < 4; ++i) pa[kc][i] = pack_bf16(s[8 * kc + 2 * i], s[8 * kc + 2 * i + 1]);
  }
}

template <int D>
__device__ __forceinline__ void rescale_o(float (&o)[D / 2], const float (&alpha)[2]) {
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] *= alpha[(i / 2) % 2];
}

// S = Q · K(stage)ᵀ, issued (not waited for). K-step k reads dims [16k, 16k + 16): half k / 4,
// 32 B per step into the 128-B atom row.
template <int D>
__device__ __forceinline__ void issue_qk(float (&s)[kBN / 2], uint32_t q_base, uint32_t k_base) {
  using L = SmemLayout<D>;
  const uint64_t q_desc = smem_desc(q_base, 16);
  const uint64_t k_desc = smem_desc(k_base, 16);
  static_for<0, D / 16>([&](auto k) {
    constexpr int kInRow = (k.value % 4) * 32;
    constexpr int kQOffset = ((k.value / 4) * kWgRows * kRowBytes + kInRow) >> 4;
    constexpr int kKOffset = ((k.value / 4) * L::kHalfTileBytes + kInRow) >> 4;
    wgmma_ss_n128<kQOffset, kKOffset>(s, q_desc, k_desc, k.value > 0 ? 1 : 0);
  });
}

// O += P · V(stage), issued (not waited for). K-step kc reads keys [16 kc, 16 kc + 16).
template <int D>
__device__ __forceinline__ void issue_pv(float (&o)[D / 2], const uint32_t (&pa)[kBN / 16][4],
                                         uint32_t v_base) {
  using L = SmemLayout<D>;
  const uint64_t v_desc = smem_desc(v_base, L::kHalfTileBytes);
  static_for<0, kBN / 16>([&](auto kc) {
    constexpr int kOffset = (kc.value * 16 * kRowBytes) >> 4;
    if constexpr (D == 128) {
      wgmma_rs_n128<kOffset>(o, pa[kc.value], v_desc);
    } else {
      wgmma_rs_n64<kOffset>(o, pa[kc.value], v_desc);
    }
  });
}

// One arrival per consumer warp once the warp is past its wgmma wait; the warp leaves converged.
__device__ __forceinline__ void release(uint32_t bar) {
  __syncwarp();
  if (threadIdx.x % 32 == 0) mbar_arrive(bar);
  __syncwarp();
}

// A consumer warpgroup: 64 query rows, every key tile of the CTA.
template <int D, bool kOverlap>
__device__ __forceinline__ void consume(const PagedAttentionParams& p, const CtaWork& w,
                                        uint32_t base) {
  using L = SmemLayout<D>;
  const int wg = static_cast<int>(threadIdx.x / 128) - 1;
  const int warp = static_cast<int>(threadIdx.x / 32) % 4;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const uint32_t bars = base + L::kBarriers;
  const uint32_t q_base = base + L::kQ + wg * L::kWgQBytes;

  // This thread's rows: g and g + 8 of its warp's 16. Rows past the new tokens borrow the last
  // row's position (a finite softmax) and are not written.
  const int row = w.q0 + wg * kWgRows + warp * 16 + lane / 4;
  int pos[2];
  pos[0] = w.prefix + min(row, w.qlen - 1);
  pos[1] = w.prefix + min(row + 8, w.qlen - 1);
  // A tile needs no mask when every key is at or before the warpgroup's first row and (with a
  // window) after its last row's window start.
  const int wg_first = w.prefix + min(w.q0 + wg * kWgRows, w.qlen - 1);
  const int wg_last = w.prefix + min(w.q0 + wg * kWgRows + kWgRows - 1, w.qlen - 1);
  const int window = p.sliding_window;
  auto need_mask = [&](int ks) {
    return !(ks + kBN - 1 <= wg_first && (window <= 0 || ks > wg_last - window));
  };
  const float scale = p.softmax_scale * kLog2e;

  float o[D / 2];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}, alpha[2];
  float s[kBN / 2];
  uint32_t pa[kBN / 16][4];

  mbar_wait(bars + 8 * kBarQ, 0);
  if constexpr (!kOverlap) {
    for (int t = 0; t < w.num_tiles; ++t) {
      const int st = t % kStages;
      const uint32_t parity = static_cast<uint32_t>(t / kStages) & 1u;
      const int ks = w.tile0 + t * kBN;
      mbar_wait(bars + 8 * (kBarFullK + st), parity);
      wgmma_fence();
      issue_qk<D>(s, q_base, base + L::kK + st * L::kTileBytes);
      wgmma_commit();
      wgmma_wait<0>();
      fence_regs(s);
      release(bars + 8 * (kBarEmptyK + st));
      softmax_tile(s, ks, need_mask(ks), pos, window, scale, m, l, alpha);
      rescale_o<D>(o, alpha);
      pack_p(s, pa);
      mbar_wait(bars + 8 * (kBarFullV + st), parity);
      wgmma_fence();
      issue_pv<D>(o, pa, base + L::kV + st * L::kTileBytes);
      wgmma_commit();
      wgmma_wait<0>();
      fence_regs(o);
      fence_regs(pa);
      release(bars + 8 * (kBarEmptyV + st));
    }
  } else {
    // Tile 0's scores alone; then each step issues tile t's Q·Kᵀ and tile t-1's P·V together
    // and runs tile t's softmax while P·V is in flight; O is rescaled once P·V has landed.
    mbar_wait(bars + 8 * (kBarFullK + 0), 0);
    wgmma_fence();
    issue_qk<D>(s, q_base, base + L::kK);
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(s);
    release(bars + 8 * (kBarEmptyK + 0));
    softmax_tile(s, w.tile0, need_mask(w.tile0), pos, window, scale, m, l, alpha);
    pack_p(s, pa);  // O is still zero: nothing to rescale
    for (int t = 1; t < w.num_tiles; ++t) {
      const int st = t % kStages, prev = (t - 1) % kStages;
      const uint32_t parity = static_cast<uint32_t>(t / kStages) & 1u;
      const uint32_t prev_parity = static_cast<uint32_t>((t - 1) / kStages) & 1u;
      const int ks = w.tile0 + t * kBN;
      // V(t-1) was loaded before K(t): waiting for both first costs nothing and keeps the two
      // issues together after one fence.
      mbar_wait(bars + 8 * (kBarFullK + st), parity);
      mbar_wait(bars + 8 * (kBarFullV + prev), prev_parity);
      wgmma_fence();
      issue_qk<D>(s, q_base, base + L::kK + st * L::kTileBytes);
      wgmma_commit();
      issue_pv<D>(o, pa, base + L::kV + prev * L::kTileBytes);
      wgmma_commit();
      wgmma_wait<1>();  // the scores (the older group) have landed
      fence_regs(s);
      release(bars + 8 * (kBarEmptyK + st));
      softmax_tile(s, ks, need_mask(ks), pos, window, scale, m, l, alpha);
      wgmma_wait<0>();
      fence_regs(o);
      fence_regs(pa);
      release(bars + 8 * (kBarEmptyV + prev));
      rescale_o<D>(o, alpha);
      pack_p(s, pa);
    }
    const int last = (w.num_tiles - 1) % kStages;
    mbar_wait(bars + 8 * (kBarFullV + last),
              static_cast<uint32_t>((w.num_tiles - 1) / kStages) & 1u);
    wgmma_fence();
    issue_pv<D>(o, pa, base + L::kV + last * L::kTileBytes);
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(o);
    fence_regs(pa);
    release(bars + 8 * (kBarEmptyV + last));
  }

  // Every real row saw at least its own position, so its sum is positive.
  const int64_t out_stride = static_cast<int64_t>(p.num_heads) * D;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float sum = l[r];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    if (row + 8 * r >= w.qlen) continue;
    __nv_bfloat16* out =
        p.out + static_cast<int64_t>(w.q_begin + row + 8 * r) * out_stride + w.head * D;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      *reinterpret_cast<__nv_bfloat162*>(out + 8 * j + 2 * (lane % 4)) =
          __floats2bfloat162_rn(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv);
    }
  }
}

#endif  // INFERLAB_HOPPER_DEVICE_CODE

template <int D, bool kOverlap>
__global__ void __launch_bounds__(kThreads, 1)
    prefill_hopper_kernel(const __grid_constant__ CUtensorMap q_map,
                          const __grid_constant__ CUtensorMap k_map,
                          const __grid_constant__ CUtensorMap v_map, const PagedAttentionParams p) {
#ifdef INFERLAB_HOPPER_DEVICE_CODE
  using L = SmemLayout<D>;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + kAtomBytes - 1) & ~static_cast<uint32_t>(kAtomBytes - 1);
  unsigned char* smem = smem_raw + (base - raw);

  // Heads vary fastest (the heads of one KV head share its tiles in L2) and query tiles run last
  // to first, so the longest CTAs start first and the causal tail holds short ones.
  CtaWork w;
  w.seq = static_cast<int>(blockIdx.z);
  w.head = static_cast<int>(blockIdx.x);
  w.q_begin = p.query_start[w.seq];
  w.qlen = p.query_start[w.seq + 1] - w.q_begin;
  if (p.skip_single_queries && w.qlen == 1) return;  // the decode kernel has it
  w.q0 = static_cast<int>(gridDim.y - 1 - blockIdx.y) * kBM;
  if (w.q0 >= w.qlen) return;
  w.kv_head = w.head / (p.num_heads / p.num_kv_heads);
  w.prefix = p.context_lens[w.seq] - w.qlen;
  const int last_row = min(w.q0 + kBM, w.qlen) - 1;
  w.kv_end = w.prefix + last_row + 1;
  w.kv_begin = p.sliding_window > 0 ? max(0, w.prefix + w.q0 - p.sliding_window + 1) : 0;
  w.tile0 = w.kv_begin / kBN * kBN;
  w.num_tiles = (w.kv_end - w.tile0 + kBN - 1) / kBN;

  if (threadIdx.x == 0) {
    const uint32_t bars = base + L::kBarriers;
    mbar_init(bars + 8 * kBarQ, 1);
    mbar_init(bars + 8 * kBarVTail, 1);
    for (int s = 0; s < kStages; ++s) {
      mbar_init(bars + 8 * (kBarFullK + s), 1);
      mbar_init(bars + 8 * (kBarFullV + s), 1);
      mbar_init(bars + 8 * (kBarEmptyK + s), kConsumerWarps);
      mbar_init(bars + 8 * (kBarEmptyV + s), kConsumerWarps);
    }
    fence_mbarrier_init();  // the TMA unit (async proxy) uses them too
  }
  __syncthreads();

  if (threadIdx.x < 128) {
    setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x < 32) produce<D>(&q_map, &k_map, &v_map, p, w, smem, base);
  } else {
    setmaxnreg_inc<kConsumerRegs>();
    consume<D, kOverlap>(p, w, base);
  }
#endif
}

// ---- host side ----

using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                   const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                   const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                   CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled through the runtime's driver entry point (ABI of CUDA 12.0).
EncodeTiledFn encode_tiled() {
  static const EncodeTiledFn fn = [] {
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    INFERLAB_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &entry, 12000,
                                                         cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || entry == nullptr) {
      throw std::runtime_error(
          "paged_attention (Hopper): the driver has no cuTensorMapEncodeTiled");
    }
    return reinterpret_cast<EncodeTiledFn>(entry);
  }();
  return fn;
}

// A bf16 tensor map with the 128-byte swizzle; out-of-bounds elements read as zeros.
CUtensorMap bf16_tensor_map(const void* data, cuuint32_t rank, const cuuint64_t* dims,
                            const cuuint64_t* strides_bytes, const cuuint32_t* box,
                            CUtensorMapL2promotion promotion, const char* what) {
  CUtensorMap map{};
  const cuuint32_t unit_strides[3] = {1, 1, 1};
  const CUresult status =
      encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, rank, const_cast<void*>(data), dims,
                     strides_bytes, box, unit_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                     CU_TENSOR_MAP_SWIZZLE_128B, promotion, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (status != CUDA_SUCCESS) {
    throw std::runtime_error(std::string("paged_attention (Hopper): cuTensorMapEncodeTiled for ") +
                             what + " failed, CUresult " +
                             std::to_string(static_cast<int>(status)));
  }
  return map;
}

template <int D, bool kOverlap>
void launch_typed(const PagedAttentionParams& p, cudaStream_t stream) {
  using L = SmemLayout<D>;
  // Over 48 KB of shared memory needs the kernel's consent, given once (a host-side attribute,
  // fine during graph capture).
  static std::atomic<uint64_t> opted_in{0};
  once_per_device(opted_in, [] {
    INFERLAB_CUDA_CHECK(cudaFuncSetAttribute(prefill_hopper_kernel<D, kOverlap>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             L::kAllocBytes));
  });

  // Queries: [num_tokens rows of q_row_stride] with this layer's heads in the first
  // num_heads · D columns; a box is 64 dims × 64 rows.
  const cuuint64_t q_dims[2] = {static_cast<cuuint64_t>(p.num_heads) * D,
                                static_cast<cuuint64_t>(p.num_tokens)};
  const cuuint64_t q_strides[1] = {static_cast<cuuint64_t>(p.q_row_stride) * 2};
  const cuuint32_t q_box[2] = {kHalfDims, kWgRows};
  const CUtensorMap q_map =
      bf16_tensor_map(p.q, 2, q_dims, q_strides, q_box, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, "Q");
  // The cache as [slot][kv_head][dim]; a box is 64 dims × 1 head × one page's slots. The pool's
  // size is not in the parameters: the slot extent is the most a 1 TB pool could hold (no pool
  // is larger, and a TMA coordinate is 32-bit), only ever indexed through the block table.
  const cuuint64_t slot_bytes = static_cast<cuuint64_t>(p.num_kv_heads) * D * 2;
  const cuuint64_t slots = std::min<cuuint64_t>((cuuint64_t{1} << 40) / slot_bytes, INT32_MAX);
  const cuuint64_t kv_dims[3] = {D, static_cast<cuuint64_t>(p.num_kv_heads), slots};
  const cuuint64_t kv_strides[2] = {D * 2, slot_bytes};
  const cuuint32_t kv_box[3] = {kHalfDims, 1, static_cast<cuuint32_t>(std::min(p.block_size, kBN))};
  const CUtensorMap k_map = bf16_tensor_map(p.cache.k, 3, kv_dims, kv_strides, kv_box,
                                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, "K");
  const CUtensorMap v_map = bf16_tensor_map(p.cache.v, 3, kv_dims, kv_strides, kv_box,
                                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, "V");

  const dim3 grid(static_cast<unsigned>(p.num_heads),
                  static_cast<unsigned>((p.max_query_len + kBM - 1) / kBM),
                  static_cast<unsigned>(p.num_seqs));
  prefill_hopper_kernel<D, kOverlap>
      <<<grid, kThreads, L::kAllocBytes, stream>>>(q_map, k_map, v_map, p);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

// Whether this binary's sm_90a image of the kernels loads on the current device (asked once;
// every instance lives in the same image).
bool image_loads() {
  static const bool loads = [] {
    cudaFuncAttributes attributes{};
    if (cudaFuncGetAttributes(&attributes, prefill_hopper_kernel<128, true>) == cudaSuccess) {
      return true;
    }
    (void)cudaGetLastError();  // not sticky: clear it so the next launch check does not see it
    return false;
  }();
  return loads;
}

bool aligned(const void* ptr, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(ptr) % bytes == 0;
}

}  // namespace

bool hopper_prefill_supported(const PagedAttentionParams& p, int device_cc) {
  if (device_cc != 90) return false;
  if (p.cache.format != DType::bf16 || p.naive) return false;
  // Head_dim 192 and 256 take the mma.sync kernel (attention_prefill.cu) instead: with two K and
  // two V stages of 128 keys their tiles alone are 192 and 256 KB, past the 227 KB of shared
  // memory a CTA may have, and a consumer's output accumulators (96 and 128 fp32 registers
  // beside 64 of scores and 32 of P) do not fit its 232 registers. Running them here would need
  // smaller key tiles, one stage or one consumer warpgroup: a kernel of its own.
  if (p.head_dim != 64 && p.head_dim != 128) return false;
  if (p.num_heads <= 0 || p.num_kv_heads <= 0 || p.num_heads % p.num_kv_heads != 0) return false;
  if (p.block_size < 16 || (p.block_size & (p.block_size - 1)) != 0) return false;
  // TMA: 16-byte aligned bases and row strides.
  if (p.q_row_stride % 8 != 0 || p.q_row_stride < static_cast<int64_t>(p.num_heads) * p.head_dim) {
    return false;
  }
  if (!aligned(p.q, 16) || !aligned(p.cache.k, 16) || !aligned(p.cache.v, 16) ||
      !aligned(p.out, 4)) {
    return false;
  }
  return image_loads();
}

void launch_prefill_hopper(const PagedAttentionParams& p, int /*sm_count*/, cudaStream_t stream,
                           HopperPrefillSchedule schedule) {
  if (p.num_seqs == 0 || p.num_tokens == 0) return;
  const bool overlap = schedule == HopperPrefillSchedule::kOverlapped;
  if (p.head_dim == 128) {
    overlap ? launch_typed<128, true>(p, stream) : launch_typed<128, false>(p, stream);
  } else if (p.head_dim == 64) {
    overlap ? launch_typed<64, true>(p, stream) : launch_typed<64, false>(p, stream);
  } else {
    throw std::invalid_argument("paged_attention (Hopper): head_dim must be 64 or 128");
  }
}

bool hopper_prefill_watchdog(HopperWatchdogReport* report) {
  HopperWatchdogReport seen;
  INFERLAB_CUDA_CHECK(cudaMemcpyFromSymbol(&seen, g_watchdog, sizeof(seen)));
  if (seen.tripped == 0) return false;
  if (report != nullptr) *report = seen;
  const HopperWatchdogReport cleared;
  INFERLAB_CUDA_CHECK(cudaMemcpyToSymbol(g_watchdog, &cleared, sizeof(cleared)));
  return true;
}

bool hopper_prefill_attributes(int head_dim, HopperPrefillSchedule schedule,
                               cudaFuncAttributes* attributes) {
  const bool overlap = schedule == HopperPrefillSchedule::kOverlapped;
  cudaError_t status = cudaErrorInvalidValue;
  if (head_dim == 128) {
    status = cudaFuncGetAttributes(
        attributes, overlap ? prefill_hopper_kernel<128, true> : prefill_hopper_kernel<128, false>);
  } else if (head_dim == 64) {
    status = cudaFuncGetAttributes(
        attributes, overlap ? prefill_hopper_kernel<64, true> : prefill_hopper_kernel<64, false>);
  }
  if (status != cudaSuccess) (void)cudaGetLastError();
  return status == cudaSuccess;
}

}  // namespace inferlab::engine::cuda::detail
