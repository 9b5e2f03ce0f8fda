#pragma once
// The GEMV kernel template (one instantiation per family and batch-tile count, in
// gemv_<kind>.cu): y = x · Wᵀ for 1-32 rows on tensor cores, every weight read once.
//
// A block: 8 warps, each owning 16 weight rows (one mma M tile) over the block's k slice.
//  1. Each lane issues its first 4 chunks of weight loads (2 rows x 4 x 16 bytes) before
//     anything else, so HBM is busy while the block prepares its input.
//  2. Prologue: the block's input rows for its k slice go to shared memory in the form the
//     mma wants (bf16; fp16-held E4M3 codes; int8), normalised (RMSNorm) and/or quantized per
//     row on the way; row statistics (inverse RMS, absmax) are computed over whole rows.
//  3. Main loop: per 64-byte chunk of its two rows each lane converts the weights to fragments
//     and issues the mma steps for every 8-row batch tile, then refills that chunk's registers
//     with the chunk 4 ahead (4 chunks stay in flight).
//  4. The accumulators go to a shared tile [rows][128]; with one k slice the block finishes
//     (scales, bias, store / residual add / SwiGLU). With several, it writes the tile to the
//     partial sums, and the last block of its feature group to arrive (a counter) adds the
//     slices in order and finishes: deterministic, no atomics on data.
//
// Why this shape (per-format bytes and floors at the top of gemv_<kind>.cu):
//  * Bytes in flight. Little's law at 4.8 TB/s and ~600 ns loaded latency asks ~3 MB in
//    flight, ~22 KB per SM. A warp issues 4 chunks x 2 rows x 16 bytes per lane = 4 KB at
//    once; 8 warps a block, 2-4 blocks an SM (64-128 registers, launch bounds 2): 64-128 KB
//    per SM, 3-6x the need, so the tail of a wave and slow warps do not starve HBM.
//  * Grid. plan_gemv aims at ~2 blocks per SM: 4096 features are 32 groups of 128, so the O and
//    down projections split k 8-13 ways; gate/up (224 groups of 64 for SwiGLU) 2 ways; the LM
//    head (1002 groups) not at all. Partial sums are capped at 1/8 of the weight bytes.
//  * Tensor cores rather than FMAs. With scalar FMAs each weight costs its conversion plus one
//    FMA per row and each row's x is re-read per weight (the old bf16 kernel lost to cuBLASLt
//    past 2 rows); an m16n8k16 mma takes 256 weights x 8 rows in one instruction, x comes from
//    shared memory once per 16 weights of a lane, so rows cost little until 32.
//  * One quad of lanes reads 64 contiguous bytes of a row per chunk and 256 per batch, whole
//    32-byte sectors; the loads bypass L1 (ld.global.nc.L1::no_allocate, LDG.E.128).
#include <stdexcept>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/gemv_device.cuh"
#include "engine/cuda/gemv_rows.cuh"

namespace inferlab::engine::cuda::gemv {

constexpr int kLoadBatch = kGemvLoadBatch;
constexpr int kMaxSmemBytes =
    static_cast<int>(kGemvHeadBytes + kGemvXBudgetBytes + kGemvMaxRows * kGemvTileStride * 4);

// The fixed head of shared memory (kGemvHeadBytes).
struct Smem {
  float* warp_sums;   // [32 rows][32] RMSNorm's first-level sums
  float* inv_rms;     // [32] per row
  float* x_scale;     // [32] per row (quantized input)
  float* red;         // [32 rows][8 warps] absmax per warp
  int* flag;          // this block finishes the split-K sum
  unsigned char* xs;  // [rows][x_stride]
  uint32_t* tile;     // [rows][kGemvTileStride] accumulator bits
};

__device__ inline Smem carve(unsigned char* base, const GemvParams& p) {
  Smem s;
  s.warp_sums = reinterpret_cast<float*>(base);
  s.inv_rms = s.warp_sums + 32 * 32;
  s.x_scale = s.inv_rms + 32;
  s.red = s.x_scale + 32;
  s.flag = reinterpret_cast<int*>(s.red + 32 * kGemvWarps);
  s.xs = base + kGemvHeadBytes;
  s.tile = reinterpret_cast<uint32_t*>(s.xs + p.rows * p.x_stride);
  return s;
}

// Weight row of the block's tile feature lf (0-127): 128 consecutive rows, or for SwiGLU gate
// rows i and up rows I + i of 64 consecutive outputs i (lf < 64 gate, lf >= 64 up).
__device__ __forceinline__ int feature_row(const GemvParams& p, int group, int lf, bool* ok) {
  if (p.epilogue == GemvEpilogue::swiglu) {
    const int i = group * 64 + (lf & 63);
    *ok = i < p.features;
    return lf < 64 ? i : p.features + i;
  }
  const int f = group * 128 + lf;
  *ok = f < p.out_rows;
  return f;
}

template <class Acc>
__device__ __forceinline__ uint32_t to_bits(Acc v) {
  if constexpr (sizeof(Acc) == 4 && Acc(0.5) != Acc(0)) {
    return __float_as_uint(v);
  } else {
    return static_cast<uint32_t>(v);
  }
}
template <class Acc>
__device__ __forceinline__ Acc from_bits(uint32_t b) {
  if constexpr (Acc(0.5) != Acc(0)) {
    return __uint_as_float(b);
  } else {
    return static_cast<Acc>(b);
  }
}

template <class K>
__device__ void stage_input(const GemvParams& p, const Smem& s, int k_begin, int k_len) {
  constexpr bool kQuantized = gemv_kind_info(K::kKind).quantized_input;
  constexpr float kCodeMax = K::kKind == GemvKind::w8a8 ? 127.0f : 448.0f;
  if (p.codes == nullptr) {
    if (p.norm_weight != nullptr) {
      rows_inv_rms(p.x, p.rows, p.in, p.eps, s.warp_sums, s.inv_rms);
    }
    if (kQuantized) {
      rows_scale(p.x, p.rows, p.in, p.norm_weight, s.inv_rms, kCodeMax, s.red, s.x_scale);
    } else if (threadIdx.x < p.rows) {
      s.x_scale[threadIdx.x] = 1.0f;
    }
  } else if (threadIdx.x < p.rows) {
    s.x_scale[threadIdx.x] = p.code_scales[threadIdx.x];
  }
  __syncthreads();
  const int groups8 = k_len / 8;
  for (int idx = threadIdx.x; idx < p.rows * groups8; idx += blockDim.x) {
    const int r = idx / groups8, i = idx - r * groups8, k = k_begin + 8 * i;
    unsigned char* dst = s.xs + r * p.x_stride + 8 * i * K::kXBytes;
    if (p.codes != nullptr) {
      K::stage_codes(p.codes + static_cast<int64_t>(r) * p.in + k, dst);
    } else {
      float v[8];
      row_values8(p.x + static_cast<int64_t>(r) * p.in, p.norm_weight,
                  p.norm_weight != nullptr ? s.inv_rms[r] : 1.0f, k, v);
      K::stage(v, s.x_scale[r], dst);
    }
  }
  __syncthreads();
}

// Finishes the block's outputs; value(r, lf) is the accumulated sum of tile feature lf.
template <class K, class Value>
__device__ void finish_block(const GemvParams& p, const Smem& s, int group, Value value) {
  if (p.epilogue == GemvEpilogue::swiglu) {
    auto* act = static_cast<__nv_bfloat16*>(p.y);
    for (int idx = threadIdx.x; idx < p.rows * 64; idx += blockDim.x) {
      const int r = idx / 64, il = idx % 64, i = group * 64 + il;
      if (i >= p.features) continue;
      float gate = K::finish(value(r, il), s.x_scale[r], p, i);
      float up = K::finish(value(r, 64 + il), s.x_scale[r], p, p.features + i);
      if (p.bias != nullptr) {
        gate += __bfloat162float(p.bias[i]);
        up += __bfloat162float(p.bias[p.features + i]);
      }
      // silu_mul_halves on the bf16 gate and up values.
      const float g = round_bf16(gate);
      const float silu = round_bf16(g / (1.0f + expf(-g)));
      act[static_cast<int64_t>(r) * p.features + i] = __float2bfloat16(silu * round_bf16(up));
    }
    return;
  }
  for (int idx = threadIdx.x; idx < p.rows * 128; idx += blockDim.x) {
    const int r = idx / 128, lf = idx % 128, f = group * 128 + lf;
    if (f >= p.out_rows) continue;
    float v = K::finish(value(r, lf), s.x_scale[r], p, f);
    if (p.bias != nullptr) v += __bfloat162float(p.bias[f]);
    const int64_t at = static_cast<int64_t>(r) * p.out_rows + f;
    if (p.epilogue == GemvEpilogue::residual_add) {
      p.residual[at] = __float2bfloat16(__bfloat162float(p.residual[at]) + round_bf16(v));
    } else if (p.y_fp32) {
      static_cast<float*>(p.y)[at] = v;
    } else {
      static_cast<__nv_bfloat16*>(p.y)[at] = __float2bfloat16(v);
    }
  }
}

template <class K, int NT>
__global__ void __launch_bounds__(kGemvThreads, 2) gemv_kernel(const GemvParams p) {
  using Acc = typename K::Acc;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const Smem s = carve(smem_raw, p);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int group = blockIdx.x;
  const int k_begin = blockIdx.y * p.slice_len;
  const int k_len = min(p.in - k_begin, p.slice_len);
  const int chunks = k_len / K::kChunkK;

  bool ok_g, ok_h;
  const int row_g = feature_row(p, group, 16 * warp + g, &ok_g);
  const int row_h = feature_row(p, group, 16 * warp + g + 8, &ok_h);
  const int64_t k_offset = static_cast<int64_t>(k_begin / K::kChunkK) * kGemvChunkBytes + 16 * t;
  const unsigned char* wg = p.w + (ok_g ? row_g : 0) * p.w_row_bytes + k_offset;
  const unsigned char* wh = p.w + (ok_h ? row_h : 0) * p.w_row_bytes + k_offset;

  // Register slots for kLoadBatch chunks; chunk c lives in slot c % kLoadBatch. Each slot is
  // refilled with the chunk kLoadBatch ahead as soon as it is consumed, so ~kLoadBatch chunks
  // stay in flight per warp all the time at no extra registers.
  uint4 wa[kLoadBatch], wb[kLoadBatch];
  typename K::Aux aux[kLoadBatch];
  auto load = [&](int u, int c) {
    wa[u] = make_uint4(0, 0, 0, 0);
    wb[u] = make_uint4(0, 0, 0, 0);
    if (c < chunks) {
      if (ok_g) wa[u] = load_weights(wg + c * kGemvChunkBytes);
      if (ok_h) wb[u] = load_weights(wh + c * kGemvChunkBytes);
      K::load_aux(p, row_g, ok_g, row_h, ok_h, k_begin + c * K::kChunkK, t, aux[u]);
    }
  };
#pragma unroll
  for (int u = 0; u < kLoadBatch; ++u) load(u, u);
  stage_input<K>(p, s, k_begin, k_len);

  Acc acc[NT][4];
  bool xv[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    xv[nt] = g + 8 * nt < p.rows;
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[nt][e] = Acc(0);
  }
  const unsigned char* xt = s.xs + g * p.x_stride + t * K::kPerLane * K::kXBytes;
  for (int c0 = 0; c0 < chunks; c0 += kLoadBatch) {
#pragma unroll
    for (int u = 0; u < kLoadBatch; ++u) {
      const int c = c0 + u;
      if (c < chunks) {
        K::template chunk<NT>(wa[u], wb[u], aux[u], xt + c * K::kChunkK * K::kXBytes, p.x_stride,
                              xv, t, acc);
        if (c + kLoadBatch < chunks) load(u, c + kLoadBatch);
      }
    }
  }

  // C fragment: rows g, g + 8 of the warp's tile at batch columns 2t, 2t + 1 of each N tile.
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    const int b = 8 * nt + 2 * t, lf = 16 * warp + g;
    if (b < p.rows) {
      s.tile[b * kGemvTileStride + lf] = to_bits(acc[nt][0]);
      s.tile[b * kGemvTileStride + lf + 8] = to_bits(acc[nt][2]);
    }
    if (b + 1 < p.rows) {
      s.tile[(b + 1) * kGemvTileStride + lf] = to_bits(acc[nt][1]);
      s.tile[(b + 1) * kGemvTileStride + lf + 8] = to_bits(acc[nt][3]);
    }
  }
  __syncthreads();
  if (gridDim.y == 1) {
    finish_block<K>(p, s, group, [&](int r, int lf) {
      return from_bits<Acc>(s.tile[r * kGemvTileStride + lf]);
    });
    return;
  }
  auto* partials = reinterpret_cast<uint32_t*>(p.partials);
  const int64_t split_stride = static_cast<int64_t>(p.rows) * p.out_rows;
  for (int idx = threadIdx.x; idx < p.rows * 128; idx += blockDim.x) {
    const int r = idx / 128, lf = idx % 128;
    bool ok;
    const int row = feature_row(p, group, lf, &ok);
    if (ok) {
      __stcg(partials + blockIdx.y * split_stride + static_cast<int64_t>(r) * p.out_rows + row,
             s.tile[r * kGemvTileStride + lf]);
    }
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0)
    *s.flag = atomicAdd(p.counters + group, 1) == static_cast<int>(gridDim.y) - 1;
  __syncthreads();
  if (*s.flag == 0) return;
  __threadfence();
  finish_block<K>(p, s, group, [&](int r, int lf) {
    bool ok;
    const int row = feature_row(p, group, lf, &ok);
    const uint32_t* at = partials + static_cast<int64_t>(r) * p.out_rows + row;
    Acc sum = Acc(0);
    for (int split = 0; split < static_cast<int>(gridDim.y); ++split) {
      sum += from_bits<Acc>(__ldcg(at + split * split_stride));
    }
    return sum;
  });
  if (threadIdx.x == 0) p.counters[group] = 0;  // ready for the next launch
}

template <class K, int kMaxTiles>
void launch_family(const GemvParams& p, const GemvPlan& plan, cudaStream_t stream) {
  static std::atomic<uint64_t> limits_set{0};
  once_per_device(limits_set, [] {
    check_cuda(cudaFuncSetAttribute(gemv_kernel<K, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    kMaxSmemBytes),
               "GEMV shared memory limit");
    if constexpr (kMaxTiles >= 2) {
      check_cuda(cudaFuncSetAttribute(gemv_kernel<K, 2>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmemBytes),
                 "GEMV shared memory limit");
    }
    if constexpr (kMaxTiles >= 4) {
      check_cuda(cudaFuncSetAttribute(gemv_kernel<K, 4>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmemBytes),
                 "GEMV shared memory limit");
    }
  });
  if (p.rows == 0) return;
  if (plan.batch_tiles > kMaxTiles)
    throw std::invalid_argument("GEMV: too many rows for this kernel");
  const dim3 grid(static_cast<unsigned>(plan.feature_groups), static_cast<unsigned>(plan.splits));
  const auto smem = static_cast<size_t>(plan.smem_bytes);
  if (plan.batch_tiles == 1) {
    gemv_kernel<K, 1><<<grid, kGemvThreads, smem, stream>>>(p);
  } else if (plan.batch_tiles == 2) {
    if constexpr (kMaxTiles >= 2) gemv_kernel<K, 2><<<grid, kGemvThreads, smem, stream>>>(p);
  } else {
    if constexpr (kMaxTiles >= 4) gemv_kernel<K, 4><<<grid, kGemvThreads, smem, stream>>>(p);
  }
  INFERLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace inferlab::engine::cuda::gemv
