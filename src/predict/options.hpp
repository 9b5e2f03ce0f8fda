#pragma once
#include <cstdint>
#include <optional>

#include "hw/hardware_spec.hpp"
#include "model/step_graph.hpp"
#include "predict/framework.hpp"

namespace inferlab {

// What the user chose; resolve_precision() turns the optional dtypes into a Precision for a
// given GPU (bf16 where it has bf16 matrix units, fp16 otherwise).
struct PredictOptions {
  int64_t batch = 1;
  int64_t input_tokens = 512;
  int64_t output_tokens = 128;
  std::optional<DType> weights, activations, kv;
  Framework framework = Framework::vllm;
  bool cuda_graphs = true;
  bool flash_attention = true;
  // The inferlab engine's switches (framework inferlab only; kernel_plan): its GEMV kernels for
  // few-row projections, and fusion into them. The defaults are the engine's own (generate,
  // bench, server): GEMV on, fusion on.
  bool gemv = true;
  bool fusion = true;
  // RoPE and the KV write as the QKV GEMV's epilogue where the engine does so
  // (model/engine_gemv_rows.hpp's engine_rope_in_qkv); false: their own kernel, as the engine
  // before 2026-11-29 (profiles without a "rope" switch).
  bool rope_in_qkv = true;
  // The flash decode reads the cache rows of earlier passes before its grid wait where the engine
  // does (bf16 caches); false: after it, as the engine before 2026-11-29's session 16 (profiles
  // without a "decode_cache" switch).
  bool early_cache_reads = true;
  // Framework pytorch: "separate" (default) or "fused_qkv_gate_up" (with_projection_layout).
  std::string projection_layout;
  int tp = 1;
  double gpu_memory_utilization = 0.9;
};

// Validates the dtype choices against the GPU and each other. Throws InputError for formats
// the GPU cannot compute in (e.g. fp8 W8A8 on an A100) or that make no sense (int4 KV). With
// framework inferlab the engine's formats: activations bf16 or int8 (W8A8), and fp8 weights
// quantize every GEMM input to fp8 (FP8 tensor cores need both operands in fp8).
Precision resolve_precision(const PredictOptions& options, const HardwareSpec& hardware);

// The kernel plan of the options' framework and switches.
KernelPlan kernel_plan_of(const PredictOptions& options);

// Throws InputError for non-positive or absurd sizes.
void validate_sizes(const PredictOptions& options);

}  // namespace inferlab
