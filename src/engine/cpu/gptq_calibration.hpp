#pragma once
// GPTQ's calibration on the CPU reference: the unquantized model run over calibration tokens,
// every layer's four projection inputs summed into their Hessians (Σ x xᵀ). All layers' inputs
// come from the one full-precision pass (not layer after layer through the already-quantized
// ones, as GPTQ's reference code does): one pass instead of one per layer on a CPU, at the cost of
// each layer not seeing its predecessors' rounding.
#include <cstdint>
#include <span>

#include "engine/llama_weights.hpp"
#include "engine/quant/gptq_solver.hpp"

namespace inferlab::engine {

// Bytes the Hessians of `config` take (double, every layer's four): what gptq_hessians holds.
int64_t gptq_hessian_bytes(const LlamaConfig& config);

// The model (bf16 values in fp32, as loaded) over `tokens`, in windows of at most `window`
// tokens each starting a fresh sequence. InputError for no tokens, a window outside [2, the
// model's context], or Hessians over `max_bytes`.
GptqHessians gptq_hessians(LlamaModel model, std::span<const int32_t> tokens, int64_t window,
                           int64_t max_bytes = int64_t{16} << 30);

}  // namespace inferlab::engine
