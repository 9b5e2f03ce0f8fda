#pragma once
// The CUDA engine's tuning switches: A/B runs of a kernel choice without rebuilding. Every field
// defaults to the measured choice (docs/MEASUREMENTS.md says where each was measured); the
// environment variables named beside them override it, and engine_tuning_from_environment() is
// the one place that reads them. EngineOptions (engine_open.hpp) carries the struct filled from
// the environment; the CUDA backend hands each part to the code it tunes (the Projector, the
// attention launcher, the sampler). C++17: the CUDA sources include it.
#include <array>
#include <cstdint>
#include <string>

#include "model/engine_gemv_rows.hpp"

namespace inferlab::engine {

// How a GEMV stages its input (cuda/gemv_plan.hpp's GemvPrologue): chosen per shape, or forced.
enum class GemvPrologueChoice { automatic, fused, prepared };
// The decode attention kernel (cuda/attention.hpp's DecodeKernel): chosen per cache, or forced.
enum class DecodeKernelChoice { automatic, chunked, streamed };
// Programmatic dependent launch of the streaming GEMV (cuda/gemv_stream.hpp's GemvStreamPdl):
// per weight format as measured, or forced.
enum class GemvPdlChoice { automatic, off, early, late };
// A mixture of experts' forms (model/engine_moe_rules.hpp): as the rule picks; the forms before
// the one-launch grouped GEMM (per_expert: the grouped CUDA-core kernels, then a cuBLASLt GEMM per
// expert); or the one-launch grouped GEMM wherever the experts' shapes fit it and the rule picks
// anything but the slot kernels (Mixtral's few experts too).
enum class MoeGemmChoice { automatic, per_expert, one_launch };
// A batch-1 decode step's layers (cuda/decode_layers.hpp): as measured per GPU and model, kernel
// by kernel, or in the one persistent launch wherever it takes the model.
enum class DecodeLayersChoice { automatic, kernels, persistent };

struct ProjectionTuning {
  bool gemv = true;            // INFERLAB_ENGINE_GEMV=0: no GEMV kernels (cuBLASLt at every row)
  int64_t gemv_rows_all = -1;  // INFERLAB_ENGINE_GEMV_ROWS=N: every format's GEMV row limit
  // INFERLAB_ENGINE_GEMV_ROWS_{BF16,INT8,INT4,FP8,W8A8}=N: one format's (before gemv_rows_all).
  // -1: the measured default (Projector::kGemvRows*).
  std::array<int64_t, 5> gemv_rows = {-1, -1, -1, -1, -1};
  int gemv_stream = -1;  // INFERLAB_ENGINE_GEMV_STREAM=0|1: the streaming GEMV; -1: default
  // INFERLAB_ENGINE_GEMV_PDL=off|early|late (0: off, 1: early); unset: per format as measured.
  GemvPdlChoice gemv_pdl = GemvPdlChoice::automatic;
  int64_t gemv_splits = 0;  // INFERLAB_ENGINE_GEMV_SPLITS=N: k slices; 0: chosen per shape
  GemvPrologueChoice gemv_prologue = GemvPrologueChoice::automatic;  // ..._GEMV_PROLOGUE
  bool lt_tune = false;  // INFERLAB_ENGINE_LT_TUNE=1: time cuBLASLt's candidates
};

struct AttentionTuning {
  bool hopper_prefill = true;       // INFERLAB_ENGINE_HOPPER_PREFILL=0: the mma.sync prefill
  bool programmatic_launch = true;  // INFERLAB_ENGINE_ATTENTION_PDL=0: no PDL for decode kernels
  DecodeKernelChoice decode_kernel = DecodeKernelChoice::automatic;  // ..._DECODE_KERNEL
  int64_t decode_splits = 0;  // INFERLAB_ENGINE_DECODE_SPLITS=N; 0: the split plan's
  // INFERLAB_ENGINE_EARLY_CACHE=0: the streamed decode kernel reads the cache only after its
  // grid wait (PagedAttentionParams::cache_before_wait).
  bool cache_before_wait = true;
};

struct EngineTuning {
  ProjectionTuning projection;
  AttentionTuning attention;
  // Tensor parallelism: all-reduces of at most this many bytes take the one-shot kernel over
  // NVLink, larger ones NCCL (INFERLAB_ENGINE_ONE_SHOT_MAX_BYTES=N; 0: NCCL always).
  int64_t one_shot_max_bytes = kEngineOneShotMaxBytes;
  // Past that, up to this many bytes the two-shot kernel (INFERLAB_ENGINE_TWO_SHOT_MAX_BYTES=N;
  // 0: off).
  int64_t two_shot_max_bytes = kEngineTwoShotMaxBytes;
  bool host_sampling = false;  // INFERLAB_ENGINE_HOST_SAMPLING=1: logits to the host, picked there
  // INFERLAB_ENGINE_ROPE_IN_QKV=0: RoPE and the KV-cache write as their own kernel where the
  // QKV GEMV's epilogue would do them (model/engine_gemv_rows.hpp's engine_rope_in_qkv).
  bool rope_in_qkv = true;
  // INFERLAB_ENGINE_MOE_GEMM=per_expert|one_launch; unset: the rule's form.
  MoeGemmChoice moe_gemm = MoeGemmChoice::automatic;
  // INFERLAB_ENGINE_DECODE_LAYERS=kernels|persistent; unset: the measured choice.
  DecodeLayersChoice decode_layers = DecodeLayersChoice::automatic;
  // INFERLAB_ENGINE_DECODE_TRACE=FILE: the persistent decode kernel's per-block stamps of the
  // last pass it ran, written to FILE as CSV when the backend closes (a profile of its stages).
  std::string decode_trace;
  // INFERLAB_ENGINE_DECODE_RING=N: the persistent decode kernel's ring slots (weight tiles in
  // flight per block), at most as many as fit and at least 4; 0: as many as fit.
  int64_t decode_ring_slots = 0;
};

// The defaults with the INFERLAB_ENGINE_* variables of the environment applied. An unset or
// empty variable keeps the default; a number is read as atoll does, negative ones as 0.
EngineTuning engine_tuning_from_environment();

}  // namespace inferlab::engine
