#pragma once
// The decode path's projections: y[rows, out] = x[rows, in] · w[out, in]ᵀ (+ bias[out]) for
// 1–16 rows, where reading the weights once is the whole cost. One warp per output feature
// streams its weight row with 16-byte loads that bypass L1 (read once), several in flight per
// lane; x, a few KB, stays in L1/L2 for every warp. fp32 accumulation, one warp reduction per
// row at the end: the result does not depend on launch order (bit-reproducible).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace inferlab::engine::cuda {

constexpr int64_t kGemvMaxRows = 16;

// Whether gemv() takes this shape: 1..16 rows, in a multiple of 8 and every pointer 16-byte
// aligned (else the caller uses cuBLASLt).
bool gemv_supported(const __nv_bfloat16* x, int64_t rows, const __nv_bfloat16* w,
                    int64_t in_features);

// y bf16, or fp32 when y_fp32; bias may be null. Launches on `stream`.
void gemv(const __nv_bfloat16* x, int64_t rows, const __nv_bfloat16* w, const __nv_bfloat16* bias,
          int64_t in_features, int64_t out_features, void* y, bool y_fp32, cudaStream_t stream);

}  // namespace inferlab::engine::cuda
