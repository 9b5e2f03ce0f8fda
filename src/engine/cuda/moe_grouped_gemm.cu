// The experts' tensor-core form in one launch (moe_kernels.hpp: moe_grouped_gemm,
// moe_grouped_gemm_swiglu). The slots' rows sit grouped by expert (moe_gather_slots); each block
// takes one 128-row tile of one expert's rows and 128 of its weight rows, and finds which from the
// experts' offsets on the device: no host read of the counts, so no synchronisation and the pass
// can be captured in a CUDA graph. The launch holds an upper bound of row tiles (every expert's
// last tile partial); the blocks past the routing's real count return at once.
//
// mma.sync m16n8k16 (bf16 in, fp32 sums), 4 warps of 64×64 outputs, k in steps of 64 (the last
// zero-filled past k) through a three-stage cp.async ring (two where the GPU's shared memory per
// block is smaller); shared rows padded to 144 bytes so that ldmatrix's eight 16-byte
// rows fall on distinct banks. On an H200 its tiles reach about 260 TFLOP/s where cuBLASLt's
// reach 590 (MEASUREMENTS §51 has the versions tried), so the rule gives it the passes that many
// small per-expert GEMMs would leave bound by the host's launches. The gate/up form loads its
// tile's weight rows as eight pairs of (8 gate rows, the same 8 up rows), so a thread holds each
// gate sum beside its up sum and applies SiLU×mul before anything is stored: the
// [slots, 2·inter] intermediate is never written.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/cuda/attention_device.cuh"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/moe_kernels.hpp"

namespace inferlab::engine::cuda {
namespace {

using bf16 = __nv_bfloat16;
using detail::cp_async16;
using detail::cp_async_commit;
using detail::cp_async_wait;
using detail::ldmatrix_x4;
using detail::mma_bf16;
using detail::pack_bf16;

constexpr int kTileRows = 128;  // slot rows a block
constexpr int kTileCols = 128;  // weight rows a block (the gate/up form: 64 gate + 64 up)
constexpr int kTileK = 64;
constexpr int kPitch = kTileK + 8;       // bf16 a shared row: 144 bytes
constexpr int kWarpsM = 2, kWarpsN = 2;  // warps of 64 × 64 outputs
constexpr int kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kMmaM = kTileRows / kWarpsM / 16;                         // m16 tiles a warp
constexpr int kMmaN = kTileCols / kWarpsN / 8;                          // n8 tiles a warp
constexpr int kChunksPerRow = kTileK / 8;                               // 16-byte copies
constexpr int kCopiesPerThread = kTileRows * kChunksPerRow / kThreads;  // of each operand a stage
constexpr int kStageElements = (kTileRows + kTileCols) * kPitch;
static_assert(kTileRows == kTileCols, "a thread copies the same chunks of both operands");
// The ring's depth: three stages where the GPU lets a block have their 110.6 KB (Hopper, A100),
// two (73.7 KB) where its limit is lower (sm_86/sm_89: 99 KB).
constexpr int ring_shared_bytes(int stages) {
  return stages * kStageElements * static_cast<int>(sizeof(bf16));
}

struct ExpertTile {
  int expert;     // -1: past the routing's tiles
  int first_row;  // the tile's first sorted position
  int rows;       // of the expert's rows in this tile (1..kTileRows)
};

// Tile `index` in expert order (expert e has ceil(count_e / kTileRows) tiles): warp 0 walks the
// experts 32 at a time with a prefix sum over its lanes.
__device__ ExpertTile find_tile(const int32_t* offsets, int num_experts, int index) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  int before = 0;  // tiles of the experts already walked
  for (int base = 0; base < num_experts; base += 32) {
    const int e = base + lane;
    const int count = e < num_experts ? offsets[e + 1] - offsets[e] : 0;
    const int tiles = (count + kTileRows - 1) / kTileRows;
    int inclusive = tiles;
    for (int d = 1; d < 32; d *= 2) {
      const int v = __shfl_up_sync(0xffffffffu, inclusive, d);
      if (lane >= d) inclusive += v;
    }
    const int local = index - before;
    const unsigned hit =
        __ballot_sync(0xffffffffu, local >= inclusive - tiles && local < inclusive);
    if (hit != 0) {
      const int owner = __ffs(static_cast<int>(hit)) - 1;
      const int tile = __shfl_sync(0xffffffffu, local - (inclusive - tiles), owner);
      const int owner_count = __shfl_sync(0xffffffffu, count, owner);
      const int owner_first = __shfl_sync(0xffffffffu, e < num_experts ? offsets[e] : 0, owner);
      return {base + owner, owner_first + tile * kTileRows,
              min(kTileRows, owner_count - tile * kTileRows)};
    }
    before += __shfl_sync(0xffffffffu, inclusive, 31);
  }
  return {-1, 0, 0};
}

__device__ __forceinline__ float round_bf16(float x) {
  return __bfloat162float(__float2bfloat16(x));
}

// kSwiGlu: w is [experts][2·out_cols, k] (gate rows, then up rows) and y[p, c] =
// bf16(bf16(silu(g)) · u) with g, u the gate and up sums rounded to bf16 (silu_mul_halves'
// roundings); otherwise w is [experts][out_cols, k] and y[p, c] = bf16(w[e][c] · x[p]).
template <bool kSwiGlu, int kStages>
__global__ void __launch_bounds__(kThreads, 2)
    grouped_gemm_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                        const int32_t* __restrict__ offsets, int num_experts, int out_cols, int k,
                        unsigned col_tiles, bf16* __restrict__ y) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  bf16* shared = reinterpret_cast<bf16*>(shared_bytes);
  __shared__ ExpertTile tile_shared;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) & 31;
  // Blocks in launch order take every column tile of one row tile before the next row tile: the
  // blocks running at once share their rows' tiles and their experts' weights in L2 (row tiles
  // first re-read every row tile from HBM once per column tile).
  const int col_tile = static_cast<int>(blockIdx.x % col_tiles);
  const int row_tile = static_cast<int>(blockIdx.x / col_tiles);
  if (warp == 0) {
    const ExpertTile found = find_tile(offsets, num_experts, row_tile);
    if (lane == 0) tile_shared = found;
  }
  __syncthreads();
  const ExpertTile tile = tile_shared;
  if (tile.expert < 0) return;

  const int weight_rows = kSwiGlu ? 2 * out_cols : out_cols;
  const bf16* expert_w = w + static_cast<int64_t>(tile.expert) * weight_rows * k;
  // This block's output columns start at col0: kTileCols of them, or kTileCols / 2 act columns.
  const int col0 = col_tile * (kSwiGlu ? kTileCols / 2 : kTileCols);
  // The weight row that shared row r holds (-1: past the matrix, zeros).
  auto weight_row = [&](int r) {
    if (kSwiGlu) {
      const int c = col0 + (r / 16) * 8 + (r % 8);
      if (c >= out_cols) return -1;
      return (r % 16) < 8 ? c : out_cols + c;
    }
    const int c = col0 + r;
    return c < out_cols ? c : -1;
  };
  // Each thread copies kCopiesPerThread 16-byte chunks of each operand a stage.
  int copy_row[kCopiesPerThread], copy_part[kCopiesPerThread], copy_weight_row[kCopiesPerThread];
#pragma unroll
  for (int i = 0; i < kCopiesPerThread; ++i) {
    const int chunk = static_cast<int>(threadIdx.x) + i * kThreads;
    copy_row[i] = chunk / kChunksPerRow;
    copy_part[i] = chunk % kChunksPerRow;
    copy_weight_row[i] = weight_row(copy_row[i]);
  }
  auto load_stage = [&](int stage, int k_tile) {
    bf16* a_shared = shared + stage * kStageElements;
    bf16* b_shared = a_shared + kTileRows * kPitch;
    const int k0 = k_tile * kTileK;
#pragma unroll
    for (int i = 0; i < kCopiesPerThread; ++i) {
      const int col = k0 + copy_part[i] * 8;
      const int at = copy_row[i] * kPitch + copy_part[i] * 8;
      const bool k_on = col < k;  // a partial last k step reads zeros past k
      const bool a_on = k_on && copy_row[i] < tile.rows;
      const bf16* a_src =
          x + static_cast<int64_t>(tile.first_row + (a_on ? copy_row[i] : 0)) * k + col;
      cp_async16(a_shared + at, a_src, a_on ? 16 : 0);
      const bool b_on = k_on && copy_weight_row[i] >= 0;
      const bf16* b_src = expert_w + static_cast<int64_t>(b_on ? copy_weight_row[i] : 0) * k + col;
      cp_async16(b_shared + at, b_src, b_on ? 16 : 0);
    }
  };

  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  const int warp_row0 = warp_m * kMmaM * 16, warp_col0 = warp_n * kMmaN * 8;
  float acc[kMmaM][kMmaN][4] = {};
  const int k_tiles = (k + kTileK - 1) / kTileK;
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) load_stage(s, s);
    cp_async_commit();
  }
  for (int kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // stage kt landed for all, and stage kt - 1 is free to refill
    const int next = kt + kStages - 1;
    if (next < k_tiles) load_stage(next % kStages, next);
    cp_async_commit();
    const bf16* a_shared = shared + (kt % kStages) * kStageElements;
    const bf16* b_shared = a_shared + kTileRows * kPitch;
#pragma unroll
    for (int ks = 0; ks < kTileK / 16; ++ks) {
      uint32_t a[kMmaM][4], b[kMmaN / 2][4];
#pragma unroll
      for (int mi = 0; mi < kMmaM; ++mi) {
        ldmatrix_x4(a[mi], a_shared + (warp_row0 + mi * 16 + (lane & 15)) * kPitch + ks * 16 +
                               (lane >> 4) * 8);
      }
#pragma unroll
      for (int nj = 0; nj < kMmaN / 2; ++nj) {
        ldmatrix_x4(b[nj], b_shared +
                               (warp_col0 + nj * 16 + (lane & 7) + (lane >> 4) * 8) * kPitch +
                               ks * 16 + ((lane >> 3) & 1) * 8);
      }
#pragma unroll
      for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
        for (int ni = 0; ni < kMmaN; ++ni) {
          mma_bf16(acc[mi][ni], a[mi], b[ni / 2][(ni % 2) * 2], b[ni / 2][(ni % 2) * 2 + 1]);
        }
      }
    }
  }
  cp_async_wait<0>();

  // acc[mi][ni][2h + j]: row warp_row0 + mi·16 + lane/4 + 8h, shared column warp_col0 + ni·8 +
  // 2(lane % 4) + j.
#pragma unroll
  for (int mi = 0; mi < kMmaM; ++mi) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = warp_row0 + mi * 16 + lane / 4 + 8 * h;
      if (row >= tile.rows) continue;
      bf16* out = y + static_cast<int64_t>(tile.first_row + row) * out_cols;
      if (kSwiGlu) {
        // Even n-tiles hold gate sums, the odd ones after them the same columns' up sums.
#pragma unroll
        for (int pair = 0; pair < kMmaN / 2; ++pair) {
          const int col = col0 + (warp_col0 / 16 + pair) * 8 + 2 * (lane % 4);
          if (col >= out_cols) continue;
          float v[2];
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const float g = round_bf16(acc[mi][2 * pair][2 * h + j]);
            const float u = round_bf16(acc[mi][2 * pair + 1][2 * h + j]);
            v[j] = round_bf16(g / (1.0f + expf(-g))) * u;
          }
          *reinterpret_cast<uint32_t*>(out + col) = pack_bf16(v[0], v[1]);
        }
      } else {
#pragma unroll
        for (int ni = 0; ni < kMmaN; ++ni) {
          const int col = col0 + warp_col0 + ni * 8 + 2 * (lane % 4);
          if (col >= out_cols) continue;
          *reinterpret_cast<uint32_t*>(out + col) =
              pack_bf16(acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]);
        }
      }
    }
  }
}

// Stages the current GPU's shared memory per block takes (3 or 2), asked once per GPU.
int ring_stages() {
  static std::atomic<int> by_device[64] = {};
  int device = 0;
  INFERLAB_CUDA_CHECK(cudaGetDevice(&device));
  std::atomic<int>& known = by_device[device & 63];
  if (int stages = known.load(std::memory_order_relaxed); stages != 0) return stages;
  int limit = 0;
  INFERLAB_CUDA_CHECK(
      cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  const int stages = limit >= ring_shared_bytes(3) ? 3 : 2;
  known.store(stages, std::memory_order_relaxed);
  return stages;
}

template <bool kSwiGlu, int kStages>
void launch_ring(const bf16* x, const bf16* w, int slots, int num_experts, int out_cols, int k,
                 const int32_t* expert_offsets, bf16* y, cudaStream_t stream) {
  // Over 48 KB of shared memory needs the kernel's consent, on every GPU it runs on (a rank per
  // GPU under --tp): host-side attributes, fine during graph capture.
  static std::atomic<uint64_t> configured{0};
  once_per_device(configured, [] {
    INFERLAB_CUDA_CHECK(cudaFuncSetAttribute(grouped_gemm_kernel<kSwiGlu, kStages>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             ring_shared_bytes(kStages)));
  });
  // At most one partial tile an expert beyond the full ones.
  const int tiles = slots / kTileRows + std::min(num_experts, slots);
  const int col_width = kSwiGlu ? kTileCols / 2 : kTileCols;
  const auto col_tiles = static_cast<unsigned>((out_cols + col_width - 1) / col_width);
  const auto blocks = static_cast<unsigned>(tiles) * col_tiles;
  grouped_gemm_kernel<kSwiGlu, kStages><<<blocks, kThreads, ring_shared_bytes(kStages), stream>>>(
      x, w, expert_offsets, num_experts, out_cols, k, col_tiles, y);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

template <bool kSwiGlu>
void launch_grouped_gemm(const bf16* x, const bf16* w, int slots, int num_experts, int out_cols,
                         int k, const int32_t* expert_offsets, bf16* y, int stages,
                         cudaStream_t stream) {
  if (!moe_grouped_gemm_fits(out_cols, k)) {
    throw std::invalid_argument("moe_grouped_gemm: " + std::to_string(k) + " inputs and " +
                                std::to_string(out_cols) +
                                " outputs are not positive multiples of 8");
  }
  if (stages != 0 && stages != 2 && stages != 3) {
    throw std::invalid_argument("moe_grouped_gemm: a ring of 2 or 3 stages, not " +
                                std::to_string(stages));
  }
  if (slots == 0) return;
  if ((stages == 0 ? ring_stages() : stages) == 3) {
    launch_ring<kSwiGlu, 3>(x, w, slots, num_experts, out_cols, k, expert_offsets, y, stream);
  } else {
    launch_ring<kSwiGlu, 2>(x, w, slots, num_experts, out_cols, k, expert_offsets, y, stream);
  }
}

}  // namespace

bool moe_grouped_gemm_fits(int out_cols, int k) {
  return k > 0 && out_cols > 0 && k % 8 == 0 && out_cols % 8 == 0;
}

void moe_grouped_gemm(const bf16* x, const bf16* w, int slots, int num_experts, int out_cols, int k,
                      const int32_t* expert_offsets, bf16* y, cudaStream_t stream, int stages) {
  launch_grouped_gemm<false>(x, w, slots, num_experts, out_cols, k, expert_offsets, y, stages,
                             stream);
}

void moe_grouped_gemm_swiglu(const bf16* x, const bf16* gate_up, int slots, int num_experts,
                             int inter, int k, const int32_t* expert_offsets, bf16* act,
                             cudaStream_t stream, int stages) {
  launch_grouped_gemm<true>(x, gate_up, slots, num_experts, inter, k, expert_offsets, act, stages,
                            stream);
}

}  // namespace inferlab::engine::cuda
