#include <cstdint>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/gemv.hpp"

namespace inferlab::engine::cuda {

namespace {

using bf16 = __nv_bfloat16;

constexpr int kWarps = 8;                      // warps (output features) per block
constexpr int kVector = 8;                     // bf16 per 16-byte load
constexpr int kUnroll = 4;                     // 16-byte weight loads in flight per lane
constexpr int kStep = 32 * kVector * kUnroll;  // elements of a weight row per warp iteration

// A weight vector: read once, so not kept in L1 (the x vectors are, for the other warps).
__device__ __forceinline__ uint4 load_streaming(const bf16* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ float dot8(const uint4& w, const uint4& x) {
  const auto* wp = reinterpret_cast<const __nv_bfloat162*>(&w);
  const auto* xp = reinterpret_cast<const __nv_bfloat162*>(&x);
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float2 a = __bfloat1622float2(wp[j]);
    const float2 b = __bfloat1622float2(xp[j]);
    sum = fmaf(a.x, b.x, sum);
    sum = fmaf(a.y, b.y, sum);
  }
  return sum;
}

// kMaxRows ≥ rows: accumulators per lane for every row; rows past `rows` are skipped. Past two
// rows every lane reads rows x vectors from L1 per weight vector and the kernel loses to
// cuBLASLt, so LtGemm sends it 1-2 rows (an experiment with 4 features per warp for 3-16 rows
// was slower still: docs/MEASUREMENTS.md §19).
template <int kMaxRows, bool kFp32Out>
__global__ void __launch_bounds__(kWarps * 32)
    gemv_kernel(const bf16* __restrict__ x, int rows, const bf16* __restrict__ w,
                const bf16* __restrict__ bias, int in, int out, void* __restrict__ y) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int feature = blockIdx.x * kWarps + warp;
  if (feature >= out) return;
  const bf16* w_row = w + static_cast<int64_t>(feature) * in;
  float acc[kMaxRows];
#pragma unroll
  for (int r = 0; r < kMaxRows; ++r) acc[r] = 0.0f;

  int k = 0;
  for (; k + kStep <= in; k += kStep) {  // whole iterations: kUnroll loads issued back to back
    uint4 wv[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) wv[u] = load_streaming(w_row + k + (u * 32 + lane) * kVector);
#pragma unroll
    for (int r = 0; r < kMaxRows; ++r) {
      if (r >= rows) break;
      const bf16* x_row = x + static_cast<int64_t>(r) * in + k;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const uint4 xv = __ldg(reinterpret_cast<const uint4*>(x_row + (u * 32 + lane) * kVector));
        acc[r] += dot8(wv[u], xv);
      }
    }
  }
  for (int i = k + lane * kVector; i < in; i += 32 * kVector) {  // the tail, one vector a lane
    const uint4 wv = load_streaming(w_row + i);
#pragma unroll
    for (int r = 0; r < kMaxRows; ++r) {
      if (r >= rows) break;
      const uint4 xv = __ldg(reinterpret_cast<const uint4*>(x + static_cast<int64_t>(r) * in + i));
      acc[r] += dot8(wv, xv);
    }
  }
#pragma unroll
  for (int r = 0; r < kMaxRows; ++r) {
    if (r >= rows) break;
    float v = acc[r];
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    if (lane == 0) {
      if (bias != nullptr) v += __bfloat162float(bias[feature]);
      const int64_t at = static_cast<int64_t>(r) * out + feature;
      if (kFp32Out) {
        static_cast<float*>(y)[at] = v;
      } else {
        static_cast<bf16*>(y)[at] = __float2bfloat16(v);
      }
    }
  }
}

template <bool kFp32Out>
void launch(const bf16* x, int rows, const bf16* w, const bf16* bias, int in, int out, void* y,
            cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((out + kWarps - 1) / kWarps));
  const dim3 block(kWarps * 32);
  if (rows <= 1) {
    gemv_kernel<1, kFp32Out><<<grid, block, 0, stream>>>(x, rows, w, bias, in, out, y);
  } else if (rows <= 2) {
    gemv_kernel<2, kFp32Out><<<grid, block, 0, stream>>>(x, rows, w, bias, in, out, y);
  } else if (rows <= 4) {
    gemv_kernel<4, kFp32Out><<<grid, block, 0, stream>>>(x, rows, w, bias, in, out, y);
  } else if (rows <= 8) {
    gemv_kernel<8, kFp32Out><<<grid, block, 0, stream>>>(x, rows, w, bias, in, out, y);
  } else {
    gemv_kernel<16, kFp32Out><<<grid, block, 0, stream>>>(x, rows, w, bias, in, out, y);
  }
  INFERLAB_CUDA_CHECK_LAUNCH();
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

}  // namespace

bool gemv_supported(const __nv_bfloat16* x, int64_t rows, const __nv_bfloat16* w,
                    int64_t in_features) {
  return rows >= 1 && rows <= kGemvMaxRows && in_features % kVector == 0 &&
         in_features <= (int64_t{1} << 30) && aligned16(x) && aligned16(w);
}

void gemv(const __nv_bfloat16* x, int64_t rows, const __nv_bfloat16* w, const __nv_bfloat16* bias,
          int64_t in_features, int64_t out_features, void* y, bool y_fp32, cudaStream_t stream) {
  if (rows == 0 || out_features == 0) return;
  const int r = static_cast<int>(rows), in = static_cast<int>(in_features),
            out = static_cast<int>(out_features);
  if (y_fp32) {
    launch<true>(x, r, w, bias, in, out, y, stream);
  } else {
    launch<false>(x, r, w, bias, in, out, y, stream);
  }
}

}  // namespace inferlab::engine::cuda
