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

// A layer's RoPE and KV-cache write run as the QKV projection's epilogue (engine/cuda's
// GemvFused::Epilogue::rope_kv_write, one kernel fewer a layer) where the layers are fused and
// the QKV projection takes the streaming GEMV (1-2 rows), the cache is bf16 (an 8-bit cache's
// scale is the absolute maximum of a whole head vector, which one GEMV task's pair of rows does
// not see) and no per-head norm stands between the projection and RoPE (Qwen3's q_norm and
// k_norm); elsewhere rope_kv_write is a kernel of its own. `enabled`: the engine's switch
// (EngineTuning::rope_in_qkv, INFERLAB_ENGINE_ROPE_IN_QKV=0; a profile's "rope" switch).
// engine/cuda/cuda_forward.cpp and the prediction's kernel list (model/engine_blocks.cpp) read it.
inline constexpr bool engine_rope_in_qkv(bool enabled, bool fused_layers, bool qkv_streams,
                                         DType kv, bool qk_norm) {
  return enabled && fused_layers && qkv_streams && kv == DType::bf16 && !qk_norm;
}

// The streaming GEMV (1-2 rows, engine/cuda/gemv_stream.hpp) stages its input rows in shared
// memory, at most this many bytes; wider rows take the tensor-core GEMV. Its staged bytes a row:
// 2 an element (bf16 inputs, or fp8 and int8 weight-only's fp16 codes), 1 for W8A8's int8 codes,
// int4's two byte planes and 8 bytes per 32 elements (2.25), rounded up to 16 bytes. The engine's
// check (gemv_stream_supported) and the prediction's path (model/engine_blocks.cpp) read it here.
inline constexpr int64_t kEngineGemvStreamStageBytes = 112 * 1024;
inline constexpr int64_t engine_gemv_stream_staged_bytes(DType weights, bool int8_activations,
                                                         int64_t rows, int64_t in) {
  const int64_t row = weights == DType::int8 && int8_activations ? in
                      : weights == DType::int4                   ? 2 * in + in / 32 * 8
                                                                 : 2 * in;
  return rows * ((row + 15) / 16 * 16);
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
