#pragma once
// The engine's projections in every weight format: y = x · Wᵀ (+ bias), nn.Linear's layout,
// x bf16 [rows, in], y bf16 (or fp32 for the LM head) [rows, out], fp32 accumulation.
//
// Two paths behind one class:
//  * Few rows (decode): the engine's GEMV kernels, one per weight format, which read each weight
//    once for every row. They also have fused forms (GemvFused): an RMSNorm prologue over the
//    residual stream (the norm's output never goes to memory), a residual-add epilogue (the O and
//    down projections add into the residual stream) and a SwiGLU epilogue (the fused gate/up
//    matrix's two halves combined into SiLU(gate)·up).
//  * Many rows (prefill, mixed batches): tensor cores through cuBLASLt. bf16: one GEMM. int8 and
//    int4 weight-only: the weights dequantized to bf16 in chunks of rows into a scratch buffer,
//    a bf16 GEMM per chunk. fp8: the input quantized to E4M3 per row, an FP8 GEMM with the
//    weight's per-channel and the input's per-row scales (outer-vector scaling), bf16 out.
//    W8A8 (int8 weights, int8 activations): the input quantized to int8 per row, an int8 GEMM
//    with int32 out, and a kernel applying the row and channel scales (and bias) into bf16.
//
// Numerics (the CPU reference in engine/quant/quantize.hpp defines them): weights dequantize as
// QuantizedMatrix says; when the input is quantized (fp8 weights, W8A8) each row of x is
// quantized as quantize_row_e4m3 / quantize_row_int8 do, on either path, so decode and prefill
// compute the same function. Every launch runs on `stream`, never synchronises and allocates
// nothing after construction (graph-capturable).
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "engine/cuda/cuda_check.hpp"
#include "util/dtype.hpp"

namespace inferlab::engine::cuda {

// One projection's weights on the device, in QuantizedMatrix's layout (engine/quant/quantize.hpp).
struct DeviceMatrix {
  DType format = DType::bf16;            // bf16, int8, int4 or fp8
  DType input_format = DType::bf16;      // bf16, or int8 (W8A8) / fp8 (with fp8 weights): x is
                                         // quantized per row before the product
  const void* data = nullptr;            // bf16 / int8 / E4M3 [out, in]; int4 packed [out, in / 2]
  const float* scales = nullptr;         // int8, fp8: [out]
  const __half* group_scales = nullptr;  // int4: [out, in / group_size]
  const uint8_t* zeros = nullptr;        // int4: [out, in / group_size], values 0-15
  int64_t out = 0, in = 0;
  int64_t group_size = 0;  // int4
};

// What a fused GEMV does around the product (takes_gemv(rows, w) must hold).
struct GemvFused {
  // Input: with norm_weight null, x is the GEMV's input [rows, in]. Otherwise x is the residual
  // stream [rows, in] and the input is rms_norm(x) · norm_weight with layer_kernels' rms_norm
  // numerics (bf16 roundings where HF rounds), computed inside the kernel.
  const __nv_bfloat16* x = nullptr;
  const __nv_bfloat16* norm_weight = nullptr;
  float eps = 0;
  enum class Epilogue {
    store,         // y [rows, out] = bf16(acc (+ bias))
    residual_add,  // residual [rows, out] = bf16(residual + bf16(acc)), in place
    swiglu,        // w is the fused gate/up matrix [2 I, in]: y [rows, I] =
                   // bf16(bf16(silu(bf16(gate))) · bf16(up)), as silu_mul_halves
  };
  Epilogue epilogue = Epilogue::store;
  const __nv_bfloat16* bias = nullptr;  // store only; [out]
  __nv_bfloat16* y = nullptr;           // store, swiglu
  __nv_bfloat16* residual = nullptr;    // residual_add
};

class Projector {
 public:
  // max_rows: the most rows a call may have (activation scratch for quantized inputs and the
  // int32 output of W8A8 are sized by it); max_in, max_out: the widest projection.
  Projector(int64_t max_rows, int64_t max_in, int64_t max_out);
  ~Projector();
  Projector(const Projector&) = delete;
  Projector& operator=(const Projector&) = delete;

  // Device bytes a Projector of these sizes allocates for `format`/`input_format` projections
  // (cuBLASLt workspace, dequantization chunk, quantized input, int32 output).
  static int64_t workspace_bytes(int64_t max_rows, int64_t max_in, int64_t max_out, DType format,
                                 DType input_format);

  // Rows up to which each weight format takes the GEMV kernels (measured; 0 switches them off).
  // INFERLAB_ENGINE_GEMV=0 in the environment switches them off too.
  void set_gemv(bool on);
  bool gemv() const;
  bool takes_gemv(int64_t rows, const DeviceMatrix& w) const;

  // y[rows, out] = x[rows, in] · Wᵀ (+ bias[out]); y bf16, or fp32 when y_fp32.
  void linear(const __nv_bfloat16* x, int64_t rows, const DeviceMatrix& w,
              const __nv_bfloat16* bias, void* y, bool y_fp32, cudaStream_t stream);
  // The fused GEMV forms; std::invalid_argument when !takes_gemv(rows, w).
  void gemv_fused(const GemvFused& args, int64_t rows, const DeviceMatrix& w, cudaStream_t stream);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferlab::engine::cuda
