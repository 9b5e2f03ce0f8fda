#pragma once
// The Projector's device memory: one allocation cut into regions, computed the same way by
// Projector::workspace_bytes (budgeting before allocating) and by the constructor. Pure host
// arithmetic (C++17, no CUDA includes), tested on the CPU.
#include <algorithm>
#include <cstdint>

#include "engine/cuda/gemv_plan.hpp"
#include "util/dtype.hpp"

namespace inferlab::engine::cuda {

constexpr int64_t kLtWorkspaceBytes = int64_t{32} << 20;  // cuBLASLt's
// Split-K partial sums: 32 rows of the 128256-row LM head in 4 slices (its input rows need
// 4 slices to fit in shared memory) take 66 MB.
constexpr int64_t kGemvPartialCapBytes = int64_t{64} << 20;
constexpr int64_t kChunkCapBytes = int64_t{64} << 20;  // dequantized weights; GEMM accumulators

struct ProjectionWorkspace {
  // Byte offsets into the allocation and sizes (each region 256-byte aligned).
  int64_t lt_offset = 0, lt_bytes = 0;
  int64_t counters_offset = 0, counters_bytes = 0;  // GEMV split-K arrival counters (int32)
  int64_t partials_offset = 0, partials_bytes = 0;  // GEMV split-K partial sums
  int64_t rows_offset = 0, rows_bytes = 0;          // prepared input: codes, or normed bf16
  int64_t scales_offset = 0, scales_bytes = 0;      // prepared input's per-row scales
  int64_t dequant_offset = 0, dequant_bytes = 0;    // int8/int4 weights as bf16, a chunk of rows
  int64_t acc_offset = 0, acc_bytes = 0;            // int32/fp32 GEMM output, a chunk of rows
  int64_t total_bytes = 0;
};

// Leading dimension (elements) of the int32 / fp32 GEMM results: padded to 16, which the
// FP8 and int8 GEMMs of cuBLASLt want.
inline int64_t accumulator_ld(int64_t out) {
  return (out + 15) / 16 * 16;
}

inline bool quantized_input(DType input_format) {
  return input_format == DType::int8 || input_format == DType::fp8;
}

// Regions for a Projector of these sizes serving bf16 matrices and (format, input_format) ones.
inline ProjectionWorkspace projection_workspace(int64_t max_rows, int64_t max_in, int64_t max_out,
                                                DType format, DType input_format) {
  ProjectionWorkspace w;
  int64_t at = 0;
  auto region = [&at](int64_t bytes, int64_t* offset, int64_t* size) {
    *offset = at;
    *size = (std::max<int64_t>(bytes, 0) + 255) / 256 * 256;
    at += *size;
  };
  const int64_t gemv_rows = std::min<int64_t>(max_rows, kGemvMaxRows);
  region(kLtWorkspaceBytes, &w.lt_offset, &w.lt_bytes);
  region((max_out + 63) / 64 * 4, &w.counters_offset, &w.counters_bytes);
  region(std::min(gemv_rows * max_out * 4 * 16, kGemvPartialCapBytes), &w.partials_offset,
         &w.partials_bytes);
  const bool quantized = quantized_input(input_format);
  // Codes of every row (quantized input), and normed bf16 rows for a GEMV of a bf16 matrix
  // (which a quantized-input Projector serves too, e.g. an unquantized LM head).
  region(std::max(quantized ? max_rows * max_in : 0, gemv_rows * max_in * 2), &w.rows_offset,
         &w.rows_bytes);
  region(quantized ? max_rows * 4 : 0, &w.scales_offset, &w.scales_bytes);
  int64_t dequant = 0;
  if ((format == DType::int8 || format == DType::int4) && input_format == DType::bf16) {
    const int64_t cap_rows = std::max<int64_t>(64, kChunkCapBytes / (max_in * 2) / 64 * 64);
    dequant = std::min(max_out, cap_rows) * max_in * 2;
  }
  region(dequant, &w.dequant_offset, &w.dequant_bytes);
  int64_t acc = 0;
  if (quantized) {
    const int64_t ld = accumulator_ld(max_out);
    const int64_t cap_rows = std::max<int64_t>(16, kChunkCapBytes / (ld * 4));
    acc = std::min(max_rows, cap_rows) * ld * 4;
  }
  region(acc, &w.acc_offset, &w.acc_bytes);
  w.total_bytes = at;
  return w;
}

}  // namespace inferlab::engine::cuda
