#pragma once
// The engine's number formats beyond bf16, chosen per model load: the projection weights, the
// KV cache and the GEMMs' activations. One description that the CPU reference, the CUDA
// backend, the CLI switches (--weights, --kv, --activations) and `inferlab quantize` share.
// (C++17: CUDA sources include it.)
#include <cstdint>
#include <string>

#include "util/dtype.hpp"

namespace inferlab::engine {

// Weights of every projection (q/k/v, o, gate/up, down and the LM head):
//   bf16  as stored;
//   int8  per output channel, symmetric: w = scale[o] · q, q in [-128, 127] (W8A16);
//   int4  groups of group_size inputs, GPTQ's form: w = scale[o][g] · (q − zero[o][g]), q and
//         zero in [0, 15], fp16 scales (W4A16);
//   fp8   E4M3 per output channel: w = scale[o] · e4m3(q); every GEMM's input is quantized to
//         E4M3 per token too (FP8 tensor cores need both operands in FP8).
// KV cache: bf16, or int8 / fp8 E4M3 with one fp32 scale per (token, KV head): each head's
//   vector of head_dim values is scaled by its own absolute maximum when it is written.
// Activations: bf16, or int8 per token (W8A8; needs int8 weights): each GEMM's input row is
//   quantized by its absolute maximum, the QKV and gate/up inputs after SmoothQuant's
//   migration (smoothquant.hpp), and the GEMM runs on int8 tensor cores.
struct QuantConfig {
  DType weights = DType::bf16;
  DType kv = DType::bf16;
  DType activations = DType::bf16;
  int64_t group_size = 128;          // int4: inputs per scale (≤ 0: one group per row)
  bool quantize_lm_head = true;      // false: the LM head stays bf16 (GPTQ checkpoints' habit)
  double smoothquant_alpha = 0.5;    // W8A8 migration strength
  int64_t calibration_tokens = 512;  // W8A8: tokens of the statistics pass

  // The GEMM input is quantized per token (fp8 weights, or W8A8).
  bool quantized_activations() const { return weights == DType::fp8 || activations == DType::int8; }
  // What the projections quantize their input to: E4M3 for fp8 weights, int8 for W8A8, else bf16.
  DType gemm_input_format() const {
    return weights == DType::fp8        ? DType::fp8
           : activations == DType::int8 ? DType::int8
                                        : DType::bf16;
  }
  // "bf16", "int4 g128", "int8 w8a8, kv fp8", ... for reports.
  std::string describe() const;
  // The int4 group of a projection `in` inputs wide.
  int64_t group_for(int64_t in) const { return group_size > 0 ? group_size : in; }
};

// --weights, --kv, --activations: InputError naming the switch and the known names.
DType parse_weight_format(const std::string& name);
DType parse_kv_format(const std::string& name);
DType parse_activation_format(const std::string& name);

// InputError for combinations the engine cannot run: int8 activations without int8 weights, a
// group size that is not a positive multiple of 32 dividing every projection's input width.
void check_quant_config(const QuantConfig& config, int64_t hidden_size, int64_t intermediate_size,
                        int64_t q_dim);

}  // namespace inferlab::engine
