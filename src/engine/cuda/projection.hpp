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
// nothing after construction (graph-capturable). A Projector's calls must be ordered (one
// stream at a time): they share its scratch (split-K partial sums, prepared input rows).
//
// The kernels: gemv_plan.hpp (how a GEMV is cut into blocks), gemv_kernel.cuh (the GEMV),
// gemv_device.cuh (fragments per format), projection_lt.cpp (cuBLASLt), projection_kernels.cu
// (dequantization and scale epilogues of the tensor-core path).
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/gemv_plan.hpp"
#include "engine/engine_tuning.hpp"
#include "model/engine_gemv_rows.hpp"
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
    store,          // y [rows, out] = bf16(acc (+ bias))
    residual_add,   // residual [rows, out] = bf16(residual + bf16(acc)), in place
    swiglu,         // w is the fused gate/up matrix [2 I, in]: y [rows, I] =
                    // bf16(bf16(silu(bf16(gate))) · bf16(up)), as silu_mul_halves
    rope_kv_write,  // w is the fused QKV matrix [(H + 2 Hkv)·d, in]: y [rows, out] as store, then
                    // what layer_kernels' rope_kv_write does to it, bit for bit: the query
                    // heads rotated in place, the rotated keys and the values into the bf16 cache
                    // (`rope`); the streaming GEMV only (takes_rope_epilogue)
  };
  Epilogue epilogue = Epilogue::store;
  // [out] (for SwiGLU [2 I]: gate then up), added to the sum before its first rounding, in
  // every epilogue.
  const __nv_bfloat16* bias = nullptr;
  __nv_bfloat16* y = nullptr;         // store, swiglu, rope_kv_write
  __nv_bfloat16* residual = nullptr;  // residual_add
  // rope_kv_write: the heads, the RoPE table and where row r's key and value go.
  struct Rope {
    int num_heads = 0, num_kv_heads = 0, head_dim = 0;
    const int32_t* positions = nullptr;  // [rows]
    const int32_t* slots = nullptr;      // [rows]: cache slots ([slot, kv_head, head_dim])
    const float* inv_freq = nullptr;     // [head_dim / 2]
    __nv_bfloat16* k_cache = nullptr;
    __nv_bfloat16* v_cache = nullptr;
  };
  Rope rope;
};

// Which route a call took (Projector::last_path), for tests and benchmarks.
enum class ProjectionPath {
  none,             // no call yet
  gemv_stream,      // streaming GEMV of 1-2 rows (gemv_stream.hpp), prologue and epilogue inside
  gemv,             // GEMV kernel (input normalised / quantized in its prologue, if at all)
  gemv_prepared,    // the prepare kernel (norm and/or quantization once), then the GEMV
  lt_bf16,          // cuBLASLt bf16 GEMM
  lt_dequant_bf16,  // int8/int4 weights dequantized to bf16 in chunks of rows, bf16 GEMMs
  lt_fp8_outer,     // input quantized, FP8 GEMM with outer-vector (row, channel) scales
  lt_fp8_epilogue,  // input quantized, FP8 GEMM to fp32, a kernel applies both scales
  lt_int8,          // input quantized, int8 GEMM to int32, a kernel applies both scales
};
const char* projection_path_name(ProjectionPath path);

// The most rows the GEMV kernels take (4 mma tiles of 8).
constexpr int64_t kProjectionGemvMaxRows = kGemvMaxRows;

class Projector {
 public:
  // Rows up to which each family takes the GEMV by default. The GEMV reads each weight once
  // for all rows, as the tensor-core path does at best, but the latter does worse at few rows:
  // cuBLASLt's skinny GEMMs reached ~60% of HBM bandwidth on the H100 (MEASUREMENTS §19), and
  // quantized weights first go through a dequantization pass (int8/int4: read q, write and
  // read bf16, 4.5-5 bytes per weight against the GEMV's 0.5-1) or a quantize launch (fp8,
  // W8A8). The GEMV stays bandwidth-bound to 32 rows (mma work grows with rows but stays far
  // under the tensor cores' rate; x comes from shared memory). To be tuned by bench_engine_
  // projection; ProjectionTuning's gemv_rows (INFERLAB_ENGINE_GEMV_ROWS[_BF16|...]=N) override.
  // bf16: the streaming GEMV's 1-2 rows only; from 3 rows cuBLASLt beat the tensor-core GEMV at
  // every row count on the H200 (MEASUREMENTS §21: 3.0-4.1 against 1.6-2.2 TB/s).
  // (model/engine_gemv_rows.hpp holds the numbers; the prediction reads them there too.)
  static constexpr int64_t kGemvRowsBf16 = kEngineGemvRowsBf16;
  static constexpr int64_t kGemvRowsInt8 = kEngineGemvRowsQuantized;
  static constexpr int64_t kGemvRowsInt4 = kEngineGemvRowsQuantized;
  static constexpr int64_t kGemvRowsFp8 = kEngineGemvRowsQuantized;
  static constexpr int64_t kGemvRowsW8a8 = kEngineGemvRowsQuantized;

  // max_rows: the most rows a call may have (activation scratch for quantized inputs and the
  // int32 output of W8A8 are sized by it); max_in, max_out: the widest projection. The
  // Projector serves bf16 matrices and (format, input_format) ones: bf16/bf16, int8/bf16,
  // int4/bf16, fp8/fp8 or int8/int8; others throw std::invalid_argument.
  // `tuning` (engine/engine_tuning.hpp) overrides the measured row limits and GEMV choices.
  Projector(int64_t max_rows, int64_t max_in, int64_t max_out, DType format = DType::bf16,
            DType input_format = DType::bf16, const ProjectionTuning& tuning = {});
  ~Projector();
  Projector(const Projector&) = delete;
  Projector& operator=(const Projector&) = delete;

  // Device bytes a Projector of these sizes allocates for `format`/`input_format` projections
  // (cuBLASLt workspace, dequantization chunk, quantized input, int32 output, the GEMV's
  // split-K scratch): exactly what the constructor allocates (projection_workspace.hpp).
  static int64_t workspace_bytes(int64_t max_rows, int64_t max_in, int64_t max_out, DType format,
                                 DType input_format);

  // Rows up to which each weight format takes the GEMV kernels (measured; 0 switches them off).
  // ProjectionTuning::gemv = false (INFERLAB_ENGINE_GEMV=0) switches them off too.
  void set_gemv(bool on);
  bool gemv() const;
  bool takes_gemv(int64_t rows, const DeviceMatrix& w) const;
  // Whether gemv_fused takes the rope_kv_write epilogue for `rows` rows of `w` (the streaming
  // GEMV runs them).
  bool takes_rope_epilogue(int64_t rows, const DeviceMatrix& w) const;
  // Every family's row limit at once (0-32; 0 switches the GEMV off), and one family's.
  void set_gemv_max_rows(int64_t rows);
  // Whether 1-2 rows take the streaming GEMV (gemv_stream.hpp; default on, off also with
  // INFERLAB_ENGINE_GEMV_STREAM=0) rather than the tensor-core GEMV.
  void set_gemv_stream(bool on);
  int64_t gemv_max_rows(const DeviceMatrix& w) const;
  // Split-K and prologue choices for A/B (INFERLAB_ENGINE_GEMV_SPLITS,
  // INFERLAB_ENGINE_GEMV_PROLOGUE=auto|fused|prepared, through ProjectionTuning at construction).
  void set_gemv_tuning(const GemvTuning& tuning);
  // The route of the last linear / gemv_fused call.
  ProjectionPath last_path() const;
  // How many cuBLASLt shapes have a plan (LtRunner::plans).
  size_t lt_plans() const;

  // y[rows, out] = x[rows, in] · Wᵀ (+ bias[out]); y bf16, or fp32 when y_fp32. Rows the GEMV
  // does not take go to the tensor cores, where fp8 and W8A8 need in and out multiples of 16
  // (std::invalid_argument otherwise).
  void linear(const __nv_bfloat16* x, int64_t rows, const DeviceMatrix& w,
              const __nv_bfloat16* bias, void* y, bool y_fp32, cudaStream_t stream);
  // The fused GEMV forms; std::invalid_argument when !takes_gemv(rows, w), or when the
  // residual overlaps x.
  void gemv_fused(const GemvFused& args, int64_t rows, const DeviceMatrix& w, cudaStream_t stream);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferlab::engine::cuda
