#pragma once
// The tensor-core path's helper kernels (projection.cpp): weights dequantized to bf16 for a
// bf16 GEMM, and the epilogues that apply per-row and per-channel scales (and bias) to an
// int32 or fp32 GEMM result. C++17: included by projection_kernels.cu.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "util/dtype.hpp"

namespace inferlab::engine::cuda {

// Weight rows [first, first + count) of an int8 or int4 matrix as bf16 [count][in]:
// bf16(scale · q) (int8), bf16(scale · (q − zero)) (int4) — the one rounding of this path.
struct DequantSource {
  DType format = DType::int8;
  const uint8_t* data = nullptr;
  const float* scales = nullptr;         // int8
  const __half* group_scales = nullptr;  // int4
  const uint8_t* zeros = nullptr;        // int4
  int64_t in = 0, group_size = 0;
};
void dequantize_rows_bf16(const DequantSource& w, int64_t first, int64_t count, __nv_bfloat16* out,
                          cudaStream_t stream);

// y[r][o] = acc[r][o] · x_scales[r] · w_scales[o] (+ bias[o]) for `rows` rows of an int32
// (acc_int) or fp32 accumulator [rows][acc_ld]; y [rows][out] bf16, or fp32 with y_fp32.
// x_scales and y point at the chunk's first row.
void scale_accumulators(const void* acc, bool acc_int, int64_t rows, int64_t out, int64_t acc_ld,
                        const float* x_scales, const float* w_scales, const __nv_bfloat16* bias,
                        void* y, bool y_fp32, cudaStream_t stream);

// y[r][o] += bias[o] for an fp32 y [rows][out].
void add_bias_fp32(float* y, int64_t rows, int64_t out, const __nv_bfloat16* bias,
                   cudaStream_t stream);

}  // namespace inferlab::engine::cuda
