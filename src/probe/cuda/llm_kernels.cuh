#pragma once
// The probe's own memory-bound LLM kernels (bf16 storage, fp32 math): RMSNorm, residual add,
// SiLU x mul, row softmax, rotate-half RoPE. Host wrappers take float vectors (rounded to bf16
// on the way in) so tests can check them against CPU references.
#include <nlohmann/json.hpp>
#include <vector>

namespace inferlab::probe {

std::vector<float> gpu_rmsnorm(const std::vector<float>& x, const std::vector<float>& weight,
                               int rows, int hidden, float eps);
std::vector<float> gpu_add(const std::vector<float>& a, const std::vector<float>& b);
// gate_up is [rows, 2 * inter] (gate then up, as vLLM lays it out); out is [rows, inter].
std::vector<float> gpu_silu_mul(const std::vector<float>& gate_up, int rows, int inter);
std::vector<float> gpu_softmax(const std::vector<float>& x, int rows, int cols);
// x is [tokens, heads, dim]; token t uses angle t * theta^(-2j/dim) for pair (j, j + dim/2).
std::vector<float> gpu_rope(const std::vector<float>& x, int tokens, int heads, int dim,
                            float theta);

// GPU time per small real kernel (one-token RMSNorm, add and SiLU x mul, 300 each, interleaved)
// inside a replayed CUDA graph: the fixed cost a step pays per kernel, beyond its bytes.
nlohmann::json measure_small_kernels_in_graph(bool quick);

// Each kernel over token counts: time, bytes moved, bandwidth. Outputs checked first.
nlohmann::json sweep_llm_kernels(size_t l2_bytes, bool quick);

}  // namespace inferlab::probe
