#pragma once
// Rows up to which the engine's projections take its GEMV kernels rather than cuBLASLt, per
// weight format: the engine's defaults (engine/cuda/projection.hpp) and the prediction's
// (model/engine_blocks.hpp) read them here, so that the two cannot drift apart.
// bf16: the streaming GEMV's 1-2 rows only; from 3 rows cuBLASLt beat the tensor-core GEMV at
// every row count on the H200 (MEASUREMENTS §21: 3.0-4.1 against 1.6-2.2 TB/s). Quantized
// weights (int8, int4, fp8, W8A8): the GEMV stays bandwidth-bound to 32 rows. C++17: CUDA
// sources include it.
#include <cstdint>

#include "util/dtype.hpp"

namespace inferlab {

inline constexpr int64_t kEngineGemvRowsBf16 = 2;
inline constexpr int64_t kEngineGemvRowsQuantized = 32;

// The weight formats whose streaming GEMV (1-2 rows) is launched with programmatic dependent
// launch by default: its blocks start while the previous kernel finishes, which an issue-bound
// GEMV turns into time (int4 3.156 -> 2.971 ms a Llama 3 8B step on the H200; bf16 and fp8 ran
// slower with it: MEASUREMENTS §45, §46). engine/cuda/gemv_stream.cu's default and the
// prediction's kernel list (model/engine_blocks.cpp) read it here.
inline constexpr bool engine_gemv_stream_programmatic(DType weights) {
  return weights == DType::int4;
}

// Tensor parallelism: all-reduces of at most this many bytes take the engine's one-shot kernel
// over NVLink, larger ones NCCL (engine/cuda/rank_collectives.hpp; the default of
// EngineTuning::one_shot_max_bytes). On two H200s the one-shot kernel saved about 1 us per
// 16 KB all-reduce against NCCL (MEASUREMENTS §32).
inline constexpr int64_t kEngineOneShotMaxBytes = 512 * 1024;
// Past it, all-reduces up to this many bytes may take the two-shot kernel (reduce-scatter and
// all-gather over NVLink in one kernel); 0: off until its curve against NCCL is measured.
inline constexpr int64_t kEngineTwoShotMaxBytes = 0;

}  // namespace inferlab
