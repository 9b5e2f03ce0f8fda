#pragma once
// The streaming GEMV's input staging (gemv_stream.cu's header table): each block turns its input
// rows into the format's staged form in shared memory before it streams the weights.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "engine/cuda/gemv_rows.cuh"
#include "engine/cuda/gemv_stream_common.cuh"
#include "engine/quant/quotient_rn.hpp"

namespace inferlab::engine::cuda::gemv_stream_detail {

// 2^n as a float, n in [-126, 127].
__device__ __forceinline__ float pow2(int n) {
  return __int_as_float((n + 127) << 23);
}

// 2^n for n in [-149, 127] (subnormal below -126), exactly.
__device__ __forceinline__ float pow2_wide(int n) {
  return n >= -126 ? pow2(n) : __int_as_float(1 << (n + 149));
}

// The exponent e that puts a block whose largest magnitude is `top` (finite) at |x · 2^-e| < 2^15:
// the largest in [2^14, 2^15). Held in [-140, 113] so that 2^-e splits into two normal factors; a
// block of bf16 subnormals (at least 2^-133) still scales to integers exactly, a zero block is all
// zeros at any e.
__device__ __forceinline__ int int4_block_exponent(float top) {
  const int biased = __float_as_int(top) >> 23;  // top ≥ 0
  return max(biased, 1) - 127 - 14;
}

// A block holding a NaN or an infinity: its relative scale becomes NaN (stage_int4), so the row's
// outputs are NaN, as the other formats' and the CPU reference's are.
constexpr int kInt4NonFiniteBlock = 1000;

// max(a, b), NaN if either is (fmaxf would drop it).
__device__ __forceinline__ float max_keeping_nan(float a, float b) {
  float d;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
}

// int4's staging (the header's table): per 32-element block v of each row, the two byte planes of
// x' = rint(x · 2^-e) in piece-major order (piece i: the 16 bytes that weight word i of a vector
// reads: low bytes of its even elements, of its odd elements, high bytes of the even, of the odd;
// byte j of each the element 2j or 2j + 1 of the word, as a word's nibbles unpack), then the
// blocks' Int4Block. Thread t owns blocks t, t + kThreads, ...; x_factor[r] = 2^e_row, the largest
// e of row r, so that every block's relative scale is at most 1 and the row's sums stay in range.
__device__ inline void stage_int4(const Params& p, const float* inv_rms, float* red,
                                  float* x_factor, unsigned char* xs) {
  const int vectors = p.in / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int r = 0; r < p.rows; ++r) {
    unsigned char* row = xs + r * staged_row_bytes<Fmt::int4>(p.in);
    auto* blocks = reinterpret_cast<Int4Block*>(row + static_cast<int64_t>(p.in) * 2);
    const bf16* x = p.x + static_cast<int64_t>(r) * p.in;
    const float inv = p.norm_weight != nullptr ? inv_rms[r] : 1.0f;
    int top_exponent = -140;
    for (int v = threadIdx.x; v < vectors; v += kThreads) {
      float values[4][8];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        gemv::row_values8(x, p.norm_weight, inv, 32 * v + 8 * i, values[i]);
      }
      float top = 0.0f;
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) top = max_keeping_nan(top, fabsf(values[i][j]));
      const bool finite = top < INFINITY;  // false for NaN too
      const int e = finite ? int4_block_exponent(top) : 0;
      const int half = (-e) >> 1;
      const float f1 = pow2(half), f2 = pow2(-e - half);  // 2^-e in two exact steps
      int sum = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        uint32_t planes[4] = {0, 0, 0, 0};  // low even, low odd, high even, high odd
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const int q = max(-32767, min(32767, __float2int_rn(values[i][j] * f1 * f2)));
          sum += q;
          const int shift = 8 * (j / 2);
          planes[j % 2] |= static_cast<uint32_t>(q & 0xff) << shift;
          planes[2 + j % 2] |= static_cast<uint32_t>((q >> 8) & 0xff) << shift;
        }
        *reinterpret_cast<uint4*>(row + (static_cast<int64_t>(i) * vectors + v) * 16) =
            make_uint4(planes[0], planes[1], planes[2], planes[3]);
      }
      // The exponent, until e_row is known.
      blocks[v].relative_scale = __int_as_float(finite ? e : kInt4NonFiniteBlock);
      blocks[v].sum = sum;
      if (finite) top_exponent = max(top_exponent, e);
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
      top_exponent = max(top_exponent, __shfl_xor_sync(0xffffffffu, top_exponent, offset));
    if (lane == 0) red[kWarps * r + warp] = __int_as_float(top_exponent);
  }
  __syncthreads();
  for (int r = 0; r < p.rows; ++r) {
    int row_exponent = -140;
    for (int w = 0; w < kWarps; ++w)
      row_exponent = max(row_exponent, __float_as_int(red[kWarps * r + w]));
    auto* blocks = reinterpret_cast<Int4Block*>(xs + r * staged_row_bytes<Fmt::int4>(p.in) +
                                                static_cast<int64_t>(p.in) * 2);
    for (int v = threadIdx.x; v < vectors; v += kThreads) {
      // 2^(e − e_row) ≤ 1; below 2^-126 of the row's largest block, 0 (its products are too).
      const int e = __float_as_int(blocks[v].relative_scale), biased = e - row_exponent + 127;
      blocks[v].relative_scale = e == kInt4NonFiniteBlock ? __int_as_float(0x7fc00000)
                                 : biased > 0             ? __int_as_float(biased << 23)
                                                          : 0.0f;
    }
    if (threadIdx.x == 0) x_factor[r] = pow2_wide(row_exponent);
  }
  __syncthreads();
}

// Stages the block's input rows (gemv_stream.hpp): x, RMSNorm'd with the unfused kernels' bits
// when there is a norm weight, in the format's form; x_factor[r] is what the sums are multiplied
// by to undo the staging's scale (the quantization scale for fp8 and W8A8).
template <Fmt F>
__device__ void stage_input(const Params& p, float* head, unsigned char* xs) {
  float* warp_sums = head;
  float* inv_rms = head + 2 * 32;
  float* red = inv_rms + 2;
  float* x_factor = red + 2 * kWarps;
  if (p.norm_weight != nullptr) {
    gemv::rows_inv_rms(p.x, p.rows, p.in, p.eps, warp_sums, inv_rms);
  }
  if constexpr (F == Fmt::int4) {
    stage_int4(p, inv_rms, red, x_factor, xs);
    return;
  }
  if constexpr (Traits<F>::kCodeMax > 0) {
    gemv::rows_scale(p.x, p.rows, p.in, p.norm_weight, inv_rms, Traits<F>::kCodeMax, red, x_factor);
    if constexpr (F == Fmt::int8) {
      // The staging multiplies by 1 / x_factor: a row whose absmax / code_max is below 2^-128
      // (absmax under ~7e-37 at 240) would make it infinite. A larger factor only stages the
      // row below code_max (the weight-only scale need not be exact: the sums are multiplied
      // back by it), and 2^120 stays finite.
      if (threadIdx.x < p.rows) x_factor[threadIdx.x] = fmaxf(x_factor[threadIdx.x], 0x1p-120f);
    }
  } else if (threadIdx.x < p.rows) {
    x_factor[threadIdx.x] = 1.0f;
  }
  __syncthreads();
  const int groups8 = p.in / 8;
  for (int idx = threadIdx.x; idx < p.rows * groups8; idx += kThreads) {
    const int r = idx / groups8, k = 8 * (idx - r * groups8);
    float v[8];
    gemv::row_values8(p.x + static_cast<int64_t>(r) * p.in, p.norm_weight,
                      p.norm_weight != nullptr ? inv_rms[r] : 1.0f, k, v);
    unsigned char* dst = xs + r * staged_row_bytes<F>(p.in) + staged_offset<F>(k, p.in);
    const float s = x_factor[r];
    // The weight-only formats' staging scale need not be exact (the sums are multiplied back by
    // s): a reciprocal, not a division per element.
    const float inv = 1.0f / s;
    // fp8 and W8A8 codes are the reference's, of v / s: quotient_rn's three operations give the
    // division's bits (quotient_rn.hpp) where s is in its range (a uniform branch); a correctly
    // rounded division takes about nine.
    const bool from_reciprocal = quotient_rn_takes(s);
    auto quotient = [&](float value) {
      return from_reciprocal ? quotient_rn(value, s, inv) : __fdiv_rn(value, s);
    };
    if constexpr (F == Fmt::bf16) {
      __nv_bfloat162 out[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) out[j] = __floats2bfloat162_rn(v[2 * j], v[2 * j + 1]);
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(out);
    } else if constexpr (F == Fmt::int8) {
      __half2 out[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) out[j] = __floats2half2_rn(v[2 * j] * inv, v[2 * j + 1] * inv);
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(out);
    } else if constexpr (F == Fmt::fp8) {
      __half2 out[4];  // two elements a conversion, the lower one in the lower half
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const __nv_fp8x2_storage_t codes = __nv_cvt_float2_to_fp8x2(
            make_float2(quotient(v[2 * j]), quotient(v[2 * j + 1])), __NV_SATFINITE, __NV_E4M3);
        const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(codes, __NV_E4M3);
        out[j] = __hmul2(__half2(h), __float2half2_rn(1.0f / 512));  // exact: a power of two
      }
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(out);
    } else {
      int8_t out[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int q = __float2int_rn(quotient(v[j]));
        out[j] = static_cast<int8_t>(max(-127, min(127, q)));
      }
      *reinterpret_cast<uint2*>(dst) = *reinterpret_cast<const uint2*>(out);
    }
  }
  __syncthreads();
}

}  // namespace inferlab::engine::cuda::gemv_stream_detail
