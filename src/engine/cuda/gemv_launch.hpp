#pragma once
// The GEMV kernels' launch arguments and launchers (one per kernel family, gemv_<kind>.cu),
// and the prepare kernel that normalises and/or quantizes input rows once for a GEMV or for
// the tensor-core path. Internal to the Projector (projection.cpp). C++17: included by .cu files.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/gemv_plan.hpp"

namespace inferlab::engine::cuda {

enum class GemvEpilogue : int { store = 0, residual_add = 1, swiglu = 2 };

struct GemvParams {
  // Weights, QuantizedMatrix's layout: row o starts at w + o * w_row_bytes.
  const unsigned char* w = nullptr;
  int64_t w_row_bytes = 0;
  const float* w_scales = nullptr;       // int8, fp8, w8a8: [out_rows]
  const __half* group_scales = nullptr;  // int4: [out_rows][groups]
  const uint8_t* zeros = nullptr;        // int4: [out_rows][groups]
  int groups = 0, group_size = 0;
  int in = 0, out_rows = 0;
  int features = 0;  // outputs per row: out_rows, or I = out_rows / 2 for SwiGLU
  int rows = 0;
  // Input: x bf16 [rows][in] (with norm_weight: the residual stream, normalised in the kernel),
  // or codes [rows][in] (int8 / E4M3 bytes) with code_scales [rows] from the prepare kernel.
  const __nv_bfloat16* x = nullptr;
  const __nv_bfloat16* norm_weight = nullptr;
  float eps = 0;
  const uint8_t* codes = nullptr;
  const float* code_scales = nullptr;
  // Tiling (GemvPlan).
  int slice_len = 0, x_stride = 0;
  // Epilogue: y [rows][features] bf16 (fp32 with y_fp32, store only), or residual in place.
  GemvEpilogue epilogue = GemvEpilogue::store;
  bool y_fp32 = false;
  const __nv_bfloat16* bias = nullptr;  // [out_rows]
  void* y = nullptr;
  __nv_bfloat16* residual = nullptr;
  // Split-K: partial sums [splits][rows][out_rows] and one arrival counter per feature group
  // (zero between launches: the last block resets it).
  float* partials = nullptr;
  int* counters = nullptr;
};

// One launcher per family; plan.ok must hold. They set each kernel's shared-memory limit on
// first use (gemv_set_smem_limits does it ahead, outside any graph capture).
void launch_gemv_bf16(const GemvParams& p, const GemvPlan& plan, cudaStream_t stream);
void launch_gemv_int8(const GemvParams& p, const GemvPlan& plan, cudaStream_t stream);
void launch_gemv_int4(const GemvParams& p, const GemvPlan& plan, cudaStream_t stream);
void launch_gemv_fp8(const GemvParams& p, const GemvPlan& plan, cudaStream_t stream);
void launch_gemv_w8a8(const GemvParams& p, const GemvPlan& plan, cudaStream_t stream);
void gemv_set_smem_limits();

// Rows of x (bf16 [rows][in], in a multiple of 8) transformed once, with the GEMV prologue's
// numerics: with norm_weight, RMSNorm as layer_kernels' rms_norm computes it (bit for bit);
// then either bf16 rows to normed_out, or, with quantize = int8 / fp8, per-row codes to
// codes_out [rows][in] and scales to scales_out [rows] (quantize_row_int8 / quantize_row_e4m3).
enum class RowQuant { none, int8, fp8 };
void launch_prepare_rows(const __nv_bfloat16* x, int rows, int in, const __nv_bfloat16* norm_weight,
                         float eps, RowQuant quant, __nv_bfloat16* normed_out, uint8_t* codes_out,
                         float* scales_out, cudaStream_t stream);

}  // namespace inferlab::engine::cuda
