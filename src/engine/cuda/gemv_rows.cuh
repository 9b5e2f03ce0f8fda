#pragma once
// Whole-row statistics of the GEMV input, shared by the GEMV prologue and the prepare kernel
// (so both compute the same bits): RMSNorm's inverse RMS, summed exactly as layer_kernels'
// rms_norm_vec_kernel sums it, the normalised values with its bf16 roundings, and the
// absolute maximum that sets a row's quantization scale (quantize_row_int8 / _e4m3: absmax /
// 127 or / 448, 1 for a zero row).
#include <cuda_bf16.h>

#include <cstdint>

namespace inferlab::engine::cuda::gemv {

__device__ __forceinline__ float round_bf16(float v) {
  return __bfloat162float(__float2bfloat16(v));
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// layer_kernels' row_threads(hidden) for a width that is a multiple of 8.
__device__ __forceinline__ int norm_threads(int in) {
  const int threads = ((in / 8 + 31) / 32) * 32;
  return threads < 32 ? 32 : (threads > 1024 ? 1024 : threads);
}

__device__ __forceinline__ uint4 load_row16(const __nv_bfloat16* p) {
  return __ldg(reinterpret_cast<const uint4*>(p));
}

__device__ __forceinline__ void unpack_bf16(const uint4& raw, float (&v)[8]) {
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    v[2 * j] = __uint_as_float(w[j] << 16);
    v[2 * j + 1] = __uint_as_float(w[j] & 0xffff0000u);
  }
}

// rsqrt(mean(x²) + eps) of rows [0, rows) of x ([rows][in], in a multiple of 8) into
// inv_rms[r], bit-identical to layer_kernels' rms_norm_vec_kernel: its thread vt (of
// norm_threads(in)) sums vectors vt, vt + VT, ... with fused multiply-adds, then block_sum's two
// butterfly levels. Here real thread tid plays virtual threads tid, tid + blockDim, ...: the
// virtual warp (tid + j·blockDim) / 32 sits in real warp tid / 32 lane for lane, so the first
// butterfly runs in registers. warp_sums: [rows][32] floats of shared memory; two barriers for
// all rows.
__device__ inline void rows_inv_rms(const __nv_bfloat16* x, int rows, int in, float eps,
                                    float* warp_sums, float* inv_rms) {
  const int virtual_threads = norm_threads(in), vectors = in / 8;
  const int virtual_warps = virtual_threads / 32, warps = blockDim.x / 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int r = 0; r < rows; ++r) {
    const __nv_bfloat16* row = x + static_cast<int64_t>(r) * in;
    for (int vw = warp; vw < virtual_warps; vw += warps) {
      const int vt = 32 * vw + lane;
      float sum = 0.0f;
      for (int i = vt; i < vectors; i += virtual_threads) {
        float v[8];
        unpack_bf16(load_row16(row + 8 * i), v);
#pragma unroll
        for (int j = 0; j < 8; ++j) sum = fmaf(v[j], v[j], sum);
      }
      sum = warp_sum(sum);
      if (lane == 0) warp_sums[32 * r + vw] = sum;
    }
  }
  __syncthreads();
  // block_sum's second level, one warp per row.
  for (int r = warp; r < rows; r += warps) {
    const float total = warp_sum(lane < virtual_warps ? warp_sums[32 * r + lane] : 0.0f);
    if (lane == 0) inv_rms[r] = rsqrtf(total / static_cast<float>(in) + eps);
  }
  __syncthreads();
}

// Eight input values at k: x, or with norm_weight HF's RMSNorm output
// bf16(w · bf16(x · inv_rms)), as floats (each exactly a bf16).
__device__ __forceinline__ void row_values8(const __nv_bfloat16* row,
                                            const __nv_bfloat16* norm_weight, float inv_rms, int k,
                                            float (&v)[8]) {
  unpack_bf16(load_row16(row + k), v);
  if (norm_weight != nullptr) {
    float w[8];
    unpack_bf16(load_row16(norm_weight + k), w);
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = round_bf16(w[j] * round_bf16(v[j] * inv_rms));
  }
}

// The quantization scale of rows [0, rows): max |value| (norm applied with inv_rms[r] when
// norm_weight is set) over each row, over code_max (1 for a zero row). red: [rows][blockDim / 32]
// floats of shared memory; two barriers for all rows.
__device__ inline void rows_scale(const __nv_bfloat16* x, int rows, int in,
                                  const __nv_bfloat16* norm_weight, const float* inv_rms,
                                  float code_max, float* red, float* scales) {
  const int warps = blockDim.x / 32;
  for (int r = 0; r < rows; ++r) {
    const __nv_bfloat16* row = x + static_cast<int64_t>(r) * in;
    const float inv = norm_weight != nullptr ? inv_rms[r] : 1.0f;
    float top = 0.0f;
    for (int i = threadIdx.x; i < in / 8; i += blockDim.x) {
      float v[8];
      row_values8(row, norm_weight, inv, 8 * i, v);
#pragma unroll
      for (int j = 0; j < 8; ++j) top = fmaxf(top, fabsf(v[j]));
    }
    top = warp_max(top);
    if (threadIdx.x % 32 == 0) red[warps * r + threadIdx.x / 32] = top;
  }
  __syncthreads();
  for (int r = threadIdx.x; r < rows; r += blockDim.x) {
    float top = 0.0f;
    for (int w = 0; w < warps; ++w) top = fmaxf(top, red[warps * r + w]);
    scales[r] = top > 0.0f ? __fdiv_rn(top, code_max) : 1.0f;
  }
  __syncthreads();
}

}  // namespace inferlab::engine::cuda::gemv
