// The CPU forward pass of a Llama-architecture model whose heads are wider than hidden_size /
// num_attention_heads (head_dim 256 from config.json's `head_dim`, as Gemma has): the config and
// the weight shapes, the logits against an independent double-precision forward written here,
// and prefill-then-decode against one full prefill.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "cpu_prefill_pieces.hpp"
#include "double_forward.hpp"
#include "engine/cpu/cpu_backend.hpp"
#include "engine/init_weights.hpp"
#include "engine/llama_config.hpp"
#include "engine/llama_weights.hpp"

namespace inferlab::engine {
namespace {

// 2 layers, hidden 64, 2 query heads and 1 KV head of 256 (q_dim 512, kv_dim 256), plain RoPE.
nlohmann::json wide_head_config_json(int64_t head_dim = 256) {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"hidden_size", 64},
          {"intermediate_size", 96},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 2},
          {"num_key_value_heads", 1},
          {"head_dim", head_dim},
          {"vocab_size", 128},
          {"max_position_embeddings", 256},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", 10000.0},
          {"hidden_act", "silu"},
          {"tie_word_embeddings", false},
          {"torch_dtype", "bfloat16"}};
}

struct WideModel {
  LlamaConfig config;
  LlamaWeights weights;
};

WideModel wide_model(uint64_t seed, int64_t head_dim = 256) {
  WideModel m;
  m.config = parse_llama_config(wide_head_config_json(head_dim), "wide", "test config");
  m.weights = random_llama_weights(m.config, seed);
  return m;
}

using testing::Matrix;

// Every position's logits of `tokens` (a fresh sequence), in double (double_forward.hpp) with
// the dense SwiGLU MLP.
Matrix independent_logits(const WideModel& model, const std::vector<int32_t>& tokens) {
  const ModelConfig& m = model.config.model;
  const double eps = model.config.rms_norm_eps;
  return testing::double_forward_logits(
      model.config, model.weights, tokens, [&](Matrix& x, int64_t n, const LayerWeights& w) {
        const Matrix h = testing::rms_norm(x, n, w.post_attention_layernorm, eps);
        const Matrix down = testing::swiglu(h, n, w.gate_proj, w.up_proj, w.down_proj,
                                            m.hidden_size, m.intermediate_size);
        for (size_t i = 0; i < x.size(); ++i) x[i] += down[i];
      });
}

std::vector<int32_t> prompt(int64_t length) {
  std::vector<int32_t> tokens;
  for (int64_t i = 0; i < length; ++i) tokens.push_back(static_cast<int32_t>((i * 37 + 11) % 128));
  return tokens;
}

TEST(CpuHeadDim256, ConfigAndWeightShapesTakeHeadDimFromConfig) {
  const WideModel model = wide_model(3);
  const ModelConfig& m = model.config.model;
  EXPECT_EQ(m.head_dim, 256);
  EXPECT_EQ(m.q_dim(), 512);
  EXPECT_EQ(m.kv_dim(), 256);
  for (const WeightSpec& spec : llama_weight_specs(model.config)) {
    std::vector<int64_t> want;
    if (spec.role == WeightRole::q_proj) want = {512, 64};
    if (spec.role == WeightRole::k_proj || spec.role == WeightRole::v_proj) want = {256, 64};
    if (spec.role == WeightRole::o_proj) want = {64, 512};
    if (!want.empty()) {
      EXPECT_EQ(spec.shape, want) << spec.name;
    }
  }
  EXPECT_EQ(model.weights.layers.at(0).q_proj.size(), 512u * 64);
  EXPECT_EQ(model.weights.layers.at(0).o_proj.size(), 64u * 512);
}

// The backend's fp32 forward against the double one: the largest difference is fp32 rounding
// (1e-6 of values of order 1) carried through two layers.
TEST(CpuHeadDim256, LogitsEqualAnIndependentDoubleForward) {
  for (int64_t head_dim : {256, 192}) {
    const WideModel model = wide_model(7, head_dim);
    const auto tokens = prompt(13);
    CpuBackend backend(model.config, model.weights, 4, 8);
    SequenceChunk chunk{tokens, 0, {5, 0, 3, 7}, true};
    const ForwardResult result = backend.forward({{chunk}});
    testing::expect_logits_match(result.logits, independent_logits(model, tokens),
                                 "head_dim " + std::to_string(head_dim));
  }
}

// A prefill of 9 tokens, a chunk of 5 after them and 3 decode steps give every position the
// logits one prefill of all 17 gives.
TEST(CpuHeadDim256, PrefillThenDecodeEqualsOneFullPrefill) {
  const WideModel model = wide_model(11);
  testing::expect_pieces_equal_one_prefill(model.config, model.weights, prompt(17));
}

}  // namespace
}  // namespace inferlab::engine
