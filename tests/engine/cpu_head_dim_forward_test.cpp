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

using Matrix = std::vector<double>;  // row-major

// y[r] = W x[r] for W [out, in] (fp32 weights), in double.
Matrix matmul(const Matrix& x, int64_t rows, const std::vector<float>& w, int64_t in, int64_t out) {
  Matrix y(static_cast<size_t>(rows * out), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double sum = 0;
      for (int64_t i = 0; i < in; ++i) {
        sum += x[static_cast<size_t>(r * in + i)] * w[static_cast<size_t>(o * in + i)];
      }
      y[static_cast<size_t>(r * out + o)] = sum;
    }
  }
  return y;
}

Matrix rms_norm(const Matrix& x, int64_t rows, const std::vector<float>& w, double eps) {
  const auto n = static_cast<int64_t>(w.size());
  Matrix y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double squares = 0;
    for (int64_t i = 0; i < n; ++i) squares += x[static_cast<size_t>(r * n + i)] * x[r * n + i];
    const double scale = 1.0 / std::sqrt(squares / static_cast<double>(n) + eps);
    for (int64_t i = 0; i < n; ++i) {
      y[static_cast<size_t>(r * n + i)] = w[static_cast<size_t>(i)] * x[r * n + i] * scale;
    }
  }
  return y;
}

// HF's rotate-half RoPE on each head of width d in row r (position r), theta 10000.
void rope(Matrix& x, int64_t rows, int64_t heads, int64_t d) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t h = 0; h < heads; ++h) {
      double* v = &x[static_cast<size_t>((r * heads + h) * d)];
      for (int64_t i = 0; i < d / 2; ++i) {
        const double angle = static_cast<double>(r) * std::pow(10000.0, -2.0 * i / d);
        const double a = v[i], b = v[i + d / 2];
        v[i] = a * std::cos(angle) - b * std::sin(angle);
        v[i + d / 2] = b * std::cos(angle) + a * std::sin(angle);
      }
    }
  }
}

// Every position's logits of `tokens` (a fresh sequence), in double: embedding, per layer
// RMSNorm, Q K V, RoPE, causal GQA softmax(q·k / sqrt(d)) V, O + residual, RMSNorm, SwiGLU +
// residual; final RMSNorm and the LM head.
Matrix independent_logits(const WideModel& model, const std::vector<int32_t>& tokens) {
  const ModelConfig& m = model.config.model;
  const int64_t t_count = static_cast<int64_t>(tokens.size()), hidden = m.hidden_size;
  const int64_t heads = m.num_heads, kv_heads = m.num_kv_heads, d = m.head_dim;
  const int64_t inter = m.intermediate_size;
  const double eps = model.config.rms_norm_eps;
  Matrix x(static_cast<size_t>(t_count * hidden));
  for (int64_t t = 0; t < t_count; ++t) {
    for (int64_t i = 0; i < hidden; ++i) {
      x[static_cast<size_t>(t * hidden + i)] =
          model.weights.embed_tokens[static_cast<size_t>(tokens[t] * hidden + i)];
    }
  }
  for (const LayerWeights& w : model.weights.layers) {
    const Matrix h = rms_norm(x, t_count, w.input_layernorm, eps);
    Matrix q = matmul(h, t_count, w.q_proj, hidden, heads * d);
    Matrix k = matmul(h, t_count, w.k_proj, hidden, kv_heads * d);
    const Matrix v = matmul(h, t_count, w.v_proj, hidden, kv_heads * d);
    rope(q, t_count, heads, d);
    rope(k, t_count, kv_heads, d);
    Matrix attn(static_cast<size_t>(t_count * heads * d), 0.0);
    for (int64_t t = 0; t < t_count; ++t) {
      for (int64_t head = 0; head < heads; ++head) {
        const int64_t kv = head / (heads / kv_heads);
        std::vector<double> p(static_cast<size_t>(t + 1));
        for (int64_t j = 0; j <= t; ++j) {
          double s = 0;
          for (int64_t i = 0; i < d; ++i)
            s += q[(t * heads + head) * d + i] * k[(j * kv_heads + kv) * d + i];
          p[static_cast<size_t>(j)] = s / std::sqrt(static_cast<double>(d));
        }
        const double top = *std::max_element(p.begin(), p.end());
        double total = 0;
        for (double& e : p) total += (e = std::exp(e - top));
        for (int64_t j = 0; j <= t; ++j) {
          for (int64_t i = 0; i < d; ++i) {
            attn[static_cast<size_t>((t * heads + head) * d + i)] +=
                p[static_cast<size_t>(j)] / total * v[(j * kv_heads + kv) * d + i];
          }
        }
      }
    }
    const Matrix o = matmul(attn, t_count, w.o_proj, heads * d, hidden);
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    const Matrix h2 = rms_norm(x, t_count, w.post_attention_layernorm, eps);
    const Matrix gate = matmul(h2, t_count, w.gate_proj, hidden, inter);
    const Matrix up = matmul(h2, t_count, w.up_proj, hidden, inter);
    Matrix act(gate.size());
    for (size_t i = 0; i < act.size(); ++i) act[i] = gate[i] / (1 + std::exp(-gate[i])) * up[i];
    const Matrix down = matmul(act, t_count, w.down_proj, inter, hidden);
    for (size_t i = 0; i < x.size(); ++i) x[i] += down[i];
  }
  const Matrix normed = rms_norm(x, t_count, model.weights.final_norm, eps);
  return matmul(normed, t_count, model.weights.output_embedding(), hidden, m.vocab_size);
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
    const Matrix want = independent_logits(model, tokens);
    ASSERT_EQ(result.logits.size(), want.size());
    double worst = 0, largest = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::abs(result.logits[i] - want[i]));
      largest = std::max(largest, std::abs(want[i]));
    }
    EXPECT_GT(largest, 0.1) << "head_dim " << head_dim << ": logits too small to tell apart";
    EXPECT_LT(worst, 1e-4 * std::max(1.0, largest)) << "head_dim " << head_dim;
  }
}

// A prefill of 9 tokens, a chunk of 5 after them and 3 decode steps give every position the
// logits one prefill of all 17 gives.
TEST(CpuHeadDim256, PrefillThenDecodeEqualsOneFullPrefill) {
  const WideModel model = wide_model(11);
  const auto tokens = prompt(17);
  CpuBackend whole(model.config, model.weights, 4, 16);
  CpuBackend pieces(model.config, model.weights, 4, 16);
  const BlockTable table = {6, 2, 9, 0, 4};
  const SequenceChunk all{tokens, 0, table, true};
  const ForwardResult reference = whole.forward({{all}});
  int64_t done = 0;
  for (int64_t length : {9, 5, 1, 1, 1}) {
    SequenceChunk chunk{
        {tokens.begin() + done, tokens.begin() + done + length}, done, {5, 1, 3, 8, 12}, true};
    const ForwardResult result = pieces.forward({{chunk}});
    ASSERT_EQ(result.rows(0), length);
    for (int64_t r = 0; r < length; ++r) {
      const auto got = result.row(r), want = reference.row(done + r);
      double worst = 0;
      for (size_t i = 0; i < got.size(); ++i)
        worst = std::max(worst, std::fabs(double{got[i]} - want[i]));
      EXPECT_LE(worst, 1e-5) << "position " << done + r;
    }
    done += length;
  }
}

}  // namespace
}  // namespace inferlab::engine
