#pragma once
#include <cstdint>
#include <vector>

#include "engine/llama_config.hpp"
#include "engine/llama_weights.hpp"

// The mixture-of-experts MLP of the CPU reference, fp32, plain loops.
namespace inferlab::engine::cpu {

// The experts one token goes to and the weight of each, in the order chosen (largest first).
struct ExpertChoice {
  std::vector<int64_t> experts;
  std::vector<float> weights;
};

// Routing of one token from its router logits [num_experts] (MoeParams): the top_k largest
// logits (ties: the lower expert index first, as torch.topk does), weights exp(l_e − max) over
// the sum across all experts (softmax restricted to the k), or across the k when
// `renormalize_top_k` (Mixtral: softmax of the top-k logits). Exponentials in double.
ExpertChoice route_token(const float* logits, int64_t num_experts, int64_t top_k,
                         bool renormalize_top_k);

// out[t] = Σ over token t's chosen experts e of weight_e · down_e(SiLU(gate_e x[t]) ⊙ up_e x[t]),
// with the router's logits router · x[t] in fp32. x: [tokens, hidden], out: [tokens, hidden].
// With `chosen`, each token's experts are appended to it (token by token, in the order chosen).
void moe_mlp(const float* x, int64_t tokens, const LayerWeights& weights, const LlamaConfig& config,
             float* out, std::vector<int32_t>* chosen = nullptr);

}  // namespace inferlab::engine::cpu
