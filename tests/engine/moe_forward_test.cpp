// The CPU forward pass of a mixture-of-experts model (Mixtral-shaped, and Qwen-MoE's routing
// without renormalisation): experts that are all one MLP give the dense model's logits, the
// logits equal an independent double-precision forward written here (the pattern of
// cpu_head_dim_forward_test.cpp), and prefill-then-decode equals one full prefill.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <numeric>
#include <vector>

#include "cpu_prefill_pieces.hpp"
#include "double_forward.hpp"
#include "engine/cpu/cpu_backend.hpp"
#include "engine/init_weights.hpp"
#include "engine/llama_config.hpp"
#include "engine/llama_weights.hpp"
#include "moe_test_support.hpp"

namespace inferlab::engine {
namespace {

struct MoeModel {
  LlamaConfig config;
  LlamaWeights weights;
};

MoeModel mixtral_model(uint64_t seed, bool renormalize_top_k = true) {
  MoeModel m;
  m.config = parse_llama_config(testing::tiny_mixtral_config_json(), "tiny-mixtral", "test");
  m.config.moe.renormalize_top_k = renormalize_top_k;
  m.weights = random_llama_weights(m.config, seed);
  return m;
}

using testing::Matrix;

// Every position's logits of `tokens` (a fresh sequence), in double (double_forward.hpp), the MLP
// half written the way transformers' MixtralSparseMoeBlock reads: router logits, softmax over
// all experts, top-k (stable: lower index on ties), renormalised over the k when asked, the
// experts' SwiGLU outputs weighted and summed.
Matrix independent_logits(const MoeModel& model, const std::vector<int32_t>& tokens) {
  const ModelConfig& m = model.config.model;
  const int64_t hidden = m.hidden_size, inter = m.intermediate_size, experts = m.num_experts;
  const double eps = model.config.rms_norm_eps;
  auto moe = [&](Matrix& x, int64_t n, const LayerWeights& w) {
    const Matrix h2 = testing::rms_norm(x, n, w.post_attention_layernorm, eps);
    const Matrix router = testing::matmul(h2, n, w.router, hidden, experts);
    for (int64_t t = 0; t < n; ++t) {
      std::vector<double> prob(router.begin() + t * experts, router.begin() + (t + 1) * experts);
      const double top = *std::max_element(prob.begin(), prob.end());
      double total = 0;
      for (double& p : prob) total += (p = std::exp(p - top));
      for (double& p : prob) p /= total;
      std::vector<int64_t> order(static_cast<size_t>(experts));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return prob[a] > prob[b]; });
      order.resize(static_cast<size_t>(m.experts_per_token));
      double chosen = 0;
      for (int64_t e : order) chosen += prob[e];
      const Matrix row(h2.begin() + t * hidden, h2.begin() + (t + 1) * hidden);
      for (int64_t e : order) {
        const double weight = model.config.moe.renormalize_top_k ? prob[e] / chosen : prob[e];
        const LayerWeights::Expert& expert = w.experts[static_cast<size_t>(e)];
        const Matrix out = testing::swiglu(row, 1, expert.gate_proj, expert.up_proj,
                                           expert.down_proj, hidden, inter);
        for (int64_t i = 0; i < hidden; ++i) x[t * hidden + i] += weight * out[i];
      }
    }
  };
  return testing::double_forward_logits(model.config, model.weights, tokens, moe);
}

std::vector<int32_t> prompt(int64_t length) {
  std::vector<int32_t> tokens;
  for (int64_t i = 0; i < length; ++i) tokens.push_back(static_cast<int32_t>((i * 37 + 11) % 96));
  return tokens;
}

std::vector<float> all_logits(const LlamaConfig& config, const LlamaWeights& weights,
                              const std::vector<int32_t>& tokens) {
  CpuBackend backend(config, weights, 4, 8);
  const SequenceChunk chunk{tokens, 0, {5, 0, 3, 7, 1}, true};
  return backend.forward({{chunk}}).logits;
}

// Experts that are all copies of one MLP make the layer that MLP times the chosen experts' total
// weight: 1 when renormalised, whatever the (random) router picks; without renormalisation, with
// a uniform router (zero weights: every logit 0, experts 0 and 1 chosen on the tie), k/E = 1/2,
// by which the dense model's down projection is scaled.
TEST(MoeForward, IdenticalExpertsGiveTheDenseModel) {
  for (bool renormalize : {true, false}) {
    const MoeModel moe = [&] {
      MoeModel m = mixtral_model(21, renormalize);
      for (LayerWeights& layer : m.weights.layers) {
        for (auto& expert : layer.experts) expert = layer.experts.front();
        if (!renormalize) std::fill(layer.router.begin(), layer.router.end(), 0.0f);
      }
      return m;
    }();
    auto dense_json = testing::tiny_mixtral_config_json();
    dense_json.erase("num_local_experts");
    dense_json.erase("num_experts_per_tok");
    dense_json["model_type"] = "mistral";
    const LlamaConfig dense_config = parse_llama_config(dense_json, "tiny-dense", "test");
    ASSERT_FALSE(dense_config.model.is_moe());
    LlamaWeights dense = moe.weights;
    const double share = renormalize ? 1.0 : 2.0 / 4.0;  // k / E of a uniform router
    for (LayerWeights& layer : dense.layers) {
      layer.gate_proj = layer.experts.front().gate_proj;
      layer.up_proj = layer.experts.front().up_proj;
      layer.down_proj = layer.experts.front().down_proj;
      for (float& value : layer.down_proj) value = static_cast<float>(value * share);
      layer.experts.clear();
      layer.router.clear();
    }
    const auto tokens = prompt(11);
    const auto got = all_logits(moe.config, moe.weights, tokens);
    const auto want = all_logits(dense_config, dense, tokens);
    ASSERT_EQ(got.size(), want.size());
    double worst = 0, largest = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::fabs(double{got[i]} - want[i]));
      largest = std::max(largest, std::fabs(double{want[i]}));
    }
    EXPECT_GT(largest, 0.1);
    EXPECT_LT(worst, 1e-5 * std::max(1.0, largest)) << "renormalize " << renormalize;
  }
}

// The backend's fp32 forward against the double one, both normalisations: fp32 rounding carried
// through two layers (a router near a tie could pick other experts; at these seeds none is).
TEST(MoeForward, LogitsEqualAnIndependentDoubleForward) {
  for (bool renormalize : {true, false}) {
    const MoeModel model = mixtral_model(7, renormalize);
    const auto tokens = prompt(13);
    const auto got = all_logits(model.config, model.weights, tokens);
    testing::expect_logits_match(got, independent_logits(model, tokens),
                                 "renormalize " + std::to_string(renormalize));
  }
}

// A prefill of 9 tokens, a chunk of 5 after them and 3 decode steps give every position the
// logits one prefill of all 17 gives.
TEST(MoeForward, PrefillThenDecodeEqualsOneFullPrefill) {
  const MoeModel model = mixtral_model(11);
  testing::expect_pieces_equal_one_prefill(model.config, model.weights, prompt(17));
}

// Qwen3-MoE: Qwen's expert names and routing (renormalised top-k here), no QKV bias, and the
// per-head q/k norms of Qwen3's attention (family spec qwen3_moe), against the double forward.
TEST(MoeForward, Qwen3MoeLogitsEqualAnIndependentDoubleForward) {
  nlohmann::json json = testing::tiny_qwen_moe_config_json(true);
  json["architectures"] = {"Qwen3MoeForCausalLM"};
  json["model_type"] = "qwen3_moe";
  MoeModel model;
  model.config = parse_llama_config(json, "tiny-qwen3-moe", "test");
  ASSERT_FALSE(model.config.model.qkv_bias);
  model.weights = random_llama_weights(model.config, 5);
  ASSERT_EQ(model.weights.layers[1].q_norm.size(), 8u);  // head_dim
  ASSERT_EQ(model.weights.layers[1].k_norm.size(), 8u);
  const auto tokens = prompt(13);
  const auto got = all_logits(model.config, model.weights, tokens);
  testing::expect_logits_match(got, independent_logits(model, tokens), "qwen3_moe");
  testing::expect_pieces_equal_one_prefill(model.config, model.weights, prompt(17));
}

}  // namespace
}  // namespace inferlab::engine
