#pragma once
// SmoothQuant's calibration on the GPU: column-wise absolute maxima of bf16 matrices (the
// inputs of the QKV and gate/up projections over the calibration tokens, and those
// projections' weights), merged into fp32 maxima already on the device.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace inferlab::engine::cuda {

// maxima[c] = max(maxima[c], max_r |m[r, c]|) for a row-major [rows, cols] matrix (atomic, so
// several launches may merge into the same maxima). Graph-capturable.
void merge_column_absmax(const __nv_bfloat16* m, int64_t rows, int64_t cols, float* maxima,
                         cudaStream_t stream);

}  // namespace inferlab::engine::cuda
