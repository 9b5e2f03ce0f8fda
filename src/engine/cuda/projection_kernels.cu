// The tensor-core path's element-wise kernels: dequantization to bf16 and scale epilogues.
// Grid-stride loops over elements (prefill-sized work: a few passes over a chunk), 16-byte
// accesses where the width allows.
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/projection_kernels.hpp"

namespace inferlab::engine::cuda {

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t items) {
  const int64_t blocks = (items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 * 16 ? (blocks > 0 ? blocks : 1) : 65535 * 16);
}

__device__ __forceinline__ float int4_weight(const DequantSource& w, int64_t row, int64_t k,
                                             uint8_t byte) {
  const int q = (byte >> (4 * (k & 1))) & 0xf;
  const int64_t g = row * (w.in / w.group_size) + k / w.group_size;
  return __half2float(w.group_scales[g]) * static_cast<float>(q - static_cast<int>(w.zeros[g]));
}

// Eight consecutive weights of one row per thread (in a multiple of 8).
__global__ void dequantize_vec_kernel(const DequantSource w, int64_t first, int64_t count,
                                      __nv_bfloat16* out) {
  const int64_t per_row = w.in / 8, total = count * per_row;
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * kThreads) {
    const int64_t r = i / per_row, k = (i - r * per_row) * 8, row = first + r;
    float v[8];
    if (w.format == DType::int8) {
      const uint2 q = *reinterpret_cast<const uint2*>(w.data + row * w.in + k);
      const float s = w.scales[row];
      for (int j = 0; j < 8; ++j) {
        const auto b = static_cast<int8_t>(((j < 4 ? q.x : q.y) >> (8 * (j % 4))) & 0xff);
        v[j] = s * static_cast<float>(b);
      }
    } else {
      const uint32_t q = *reinterpret_cast<const uint32_t*>(w.data + (row * w.in + k) / 2);
      if (w.group_size % 8 == 0) {  // one group for all eight
        const int64_t g = row * (w.in / w.group_size) + k / w.group_size;
        const float s = __half2float(w.group_scales[g]);
        const int zero = w.zeros[g];
        // Signed before subtracting: an unsigned nibble minus the zero would wrap around.
        for (int j = 0; j < 8; ++j) {
          v[j] = s * static_cast<float>(static_cast<int>((q >> (4 * j)) & 0xfu) - zero);
        }
      } else {
        for (int j = 0; j < 8; ++j) {
          v[j] = int4_weight(w, row, k + j, static_cast<uint8_t>(q >> (8 * (j / 2))));
        }
      }
    }
    __nv_bfloat16 b[8];
    for (int j = 0; j < 8; ++j) b[j] = __float2bfloat16(v[j]);
    *reinterpret_cast<uint4*>(out + r * w.in + k) = *reinterpret_cast<const uint4*>(b);
  }
}

__global__ void dequantize_scalar_kernel(const DequantSource w, int64_t first, int64_t count,
                                         __nv_bfloat16* out) {
  const int64_t total = count * w.in;
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * kThreads) {
    const int64_t r = i / w.in, k = i - r * w.in, row = first + r;
    float v;
    if (w.format == DType::int8) {
      v = w.scales[row] * static_cast<float>(static_cast<int8_t>(w.data[row * w.in + k]));
    } else {
      v = int4_weight(w, row, k, w.data[(row * w.in + k) / 2]);
    }
    out[i] = __float2bfloat16(v);
  }
}

template <class Acc>
__global__ void scale_kernel(const Acc* acc, int64_t rows, int64_t out, int64_t acc_ld,
                             const float* x_scales, const float* w_scales,
                             const __nv_bfloat16* bias, void* y, bool y_fp32) {
  const int64_t total = rows * out;
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * kThreads) {
    const int64_t r = i / out, o = i - r * out;
    float v = static_cast<float>(acc[r * acc_ld + o]) * x_scales[r] * w_scales[o];
    if (bias != nullptr) v += __bfloat162float(bias[o]);
    if (y_fp32) {
      static_cast<float*>(y)[i] = v;
    } else {
      static_cast<__nv_bfloat16*>(y)[i] = __float2bfloat16(v);
    }
  }
}

__global__ void add_bias_kernel(float* y, int64_t rows, int64_t out, const __nv_bfloat16* bias) {
  const int64_t total = rows * out;
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * kThreads) {
    y[i] += __bfloat162float(bias[i % out]);
  }
}

}  // namespace

void dequantize_rows_bf16(const DequantSource& w, int64_t first, int64_t count, __nv_bfloat16* out,
                          cudaStream_t stream) {
  if (count == 0) return;
  if (w.in % 8 == 0) {
    dequantize_vec_kernel<<<blocks_for(count * w.in / 8), kThreads, 0, stream>>>(w, first, count,
                                                                                 out);
  } else {
    dequantize_scalar_kernel<<<blocks_for(count * w.in), kThreads, 0, stream>>>(w, first, count,
                                                                                out);
  }
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void scale_accumulators(const void* acc, bool acc_int, int64_t rows, int64_t out, int64_t acc_ld,
                        const float* x_scales, const float* w_scales, const __nv_bfloat16* bias,
                        void* y, bool y_fp32, cudaStream_t stream) {
  if (rows == 0) return;
  const unsigned blocks = blocks_for(rows * out);
  if (acc_int) {
    scale_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const int32_t*>(acc), rows, out,
                                                  acc_ld, x_scales, w_scales, bias, y, y_fp32);
  } else {
    scale_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const float*>(acc), rows, out, acc_ld,
                                                  x_scales, w_scales, bias, y, y_fp32);
  }
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void add_bias_fp32(float* y, int64_t rows, int64_t out, const __nv_bfloat16* bias,
                   cudaStream_t stream) {
  if (rows == 0 || bias == nullptr) return;
  add_bias_kernel<<<blocks_for(rows * out), kThreads, 0, stream>>>(y, rows, out, bias);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace inferlab::engine::cuda
