#include "engine/cpu/moe.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "engine/cpu/ops.hpp"

namespace inferlab::engine::cpu {

ExpertChoice route_token(const float* logits, int64_t num_experts, int64_t top_k,
                         bool renormalize_top_k) {
  if (num_experts < 1 || top_k < 1 || top_k > num_experts) {
    throw std::invalid_argument("route_token: need 1 <= top_k <= num_experts");
  }
  std::vector<int64_t> order(static_cast<size_t>(num_experts));
  std::iota(order.begin(), order.end(), 0);
  // Larger logit first; equal logits keep the lower index first.
  std::stable_sort(order.begin(), order.end(),
                   [logits](int64_t a, int64_t b) { return logits[a] > logits[b]; });
  ExpertChoice choice;
  choice.experts.assign(order.begin(), order.begin() + top_k);
  const double top = logits[choice.experts.front()];
  double total = 0;
  if (!renormalize_top_k) {
    for (int64_t e = 0; e < num_experts; ++e) total += std::exp(double{logits[e]} - top);
  } else {
    for (int64_t e : choice.experts) total += std::exp(double{logits[e]} - top);
  }
  for (int64_t e : choice.experts) {
    choice.weights.push_back(static_cast<float>(std::exp(double{logits[e]} - top) / total));
  }
  return choice;
}

void moe_mlp(const float* x, int64_t tokens, const LayerWeights& weights, const LlamaConfig& config,
             float* out, std::vector<int32_t>* chosen) {
  const ModelConfig& m = config.model;
  const int64_t hidden = m.hidden_size, inter = m.intermediate_size;
  if (static_cast<int64_t>(weights.experts.size()) != m.num_experts) {
    throw std::invalid_argument("moe_mlp: the layer's experts do not match the config");
  }
  std::vector<float> logits(static_cast<size_t>(m.num_experts));
  std::vector<float> gate(static_cast<size_t>(inter)), up(static_cast<size_t>(inter));
  std::vector<float> down(static_cast<size_t>(hidden));
  for (int64_t t = 0; t < tokens; ++t) {
    const float* row = x + t * hidden;
    float* result = out + t * hidden;
    std::fill(result, result + hidden, 0.0f);
    linear(row, 1, weights.router.data(), nullptr, hidden, m.num_experts, logits.data());
    const ExpertChoice choice = route_token(logits.data(), m.num_experts, m.experts_per_token,
                                            config.moe.renormalize_top_k);
    if (chosen != nullptr) {
      for (int64_t e : choice.experts) chosen->push_back(static_cast<int32_t>(e));
    }
    for (size_t c = 0; c < choice.experts.size(); ++c) {
      const auto& expert = weights.experts[static_cast<size_t>(choice.experts[c])];
      linear(row, 1, expert.gate_proj.data(), nullptr, hidden, inter, gate.data());
      linear(row, 1, expert.up_proj.data(), nullptr, hidden, inter, up.data());
      silu_mul(gate.data(), up.data(), inter);
      linear(gate.data(), 1, expert.down_proj.data(), nullptr, inter, hidden, down.data());
      for (int64_t i = 0; i < hidden; ++i) result[i] += choice.weights[c] * down[i];
    }
  }
}

}  // namespace inferlab::engine::cpu
