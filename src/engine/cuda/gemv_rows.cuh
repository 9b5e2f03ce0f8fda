#pragma once
// Whole-row statistics of the GEMV input, shared by the GEMV prologue and the prepare kernel
// (both 256 threads a block, so both compute the same bits): RMSNorm's inverse RMS, summed
// exactly as layer_kernels' rms_norm_vec_kernel sums it, the normalised values with its bf16
// roundings, and the absolute maximum that sets a row's quantization scale.
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

// rsqrt(mean(x²) + eps) of one row of `in` bf16 (in a multiple of 8), bit-identical to
// rms_norm_vec_kernel: its thread vt (of norm_threads(in)) sums vectors vt, vt + VT, ... with
// fused multiply-adds, then block_sum's two butterfly levels. Here each thread of the block
// plays one or more of those threads. part: 1024 floats, warp_sums: 32 floats of shared
// memory. Every thread gets the result; ends with a barrier (the scratch is free again).
__device__ inline float row_inv_rms(const __nv_bfloat16* row, int in, float eps, float* part,
                                    float* warp_sums) {
  const int virtual_threads = norm_threads(in), vectors = in / 8;
  for (int vt = threadIdx.x; vt < virtual_threads; vt += blockDim.x) {
    float sum = 0.0f;
    for (int i = vt; i < vectors; i += virtual_threads) {
      float v[8];
      unpack_bf16(load_row16(row + 8 * i), v);
#pragma unroll
      for (int j = 0; j < 8; ++j) sum = fmaf(v[j], v[j], sum);
    }
    part[vt] = sum;
  }
  __syncthreads();
  const int lane = threadIdx.x % 32, virtual_warps = virtual_threads / 32;
  for (int w = threadIdx.x / 32; w < virtual_warps; w += blockDim.x / 32) {
    const float v = warp_sum(part[32 * w + lane]);
    if (lane == 0) warp_sums[w] = v;
  }
  __syncthreads();
  // block_sum's second level, computed by every warp alike.
  const float total = warp_sum(lane < virtual_warps ? warp_sums[lane] : 0.0f);
  __syncthreads();
  return rsqrtf(total / static_cast<float>(in) + eps);
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

// max |value| over one row (norm applied when norm_weight is set); every thread gets it; ends
// with a barrier. red: 32 floats of shared memory.
__device__ inline float row_absmax(const __nv_bfloat16* row, const __nv_bfloat16* norm_weight,
                                   float inv_rms, int in, float* red) {
  float top = 0.0f;
  for (int i = threadIdx.x; i < in / 8; i += blockDim.x) {
    float v[8];
    row_values8(row, norm_weight, inv_rms, 8 * i, v);
#pragma unroll
    for (int j = 0; j < 8; ++j) top = fmaxf(top, fabsf(v[j]));
  }
  top = warp_max(top);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = top;
  __syncthreads();
  const int warps = blockDim.x / 32;
  top = warp_max(threadIdx.x % 32 < warps ? red[threadIdx.x % 32] : 0.0f);
  __syncthreads();
  return top;
}

// quantize_row_int8 / quantize_row_e4m3's scale: absmax / 127 (or 448), 1 for a zero row.
__device__ __forceinline__ float row_scale(float absmax, float code_max) {
  return absmax > 0.0f ? __fdiv_rn(absmax, code_max) : 1.0f;
}

}  // namespace inferlab::engine::cuda::gemv
