#pragma once
// An independent double-precision forward pass of a Llama-architecture model, for tests that set
// the CPU backend beside it: embedding; per layer RMSNorm, Q K V (Qwen3: each head RMS-normed
// when the layer has q_norm/k_norm), HF's rotate-half RoPE (theta
// 10000, position = row), causal GQA softmax(q·k / sqrt(d)) V, O + residual, then the caller's
// MLP half (dense SwiGLU, experts, ...); final RMSNorm and the LM head. Written from the
// definitions, sharing no code with the engine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/llama_config.hpp"
#include "engine/llama_weights.hpp"

namespace inferlab::engine::testing {

using Matrix = std::vector<double>;  // row-major

// y[r] = W x[r] for W [out, in] (fp32 weights), in double.
inline Matrix matmul(const Matrix& x, int64_t rows, const std::vector<float>& w, int64_t in,
                     int64_t out) {
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

inline Matrix rms_norm(const Matrix& x, int64_t rows, const std::vector<float>& w, double eps) {
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
inline void rope(Matrix& x, int64_t rows, int64_t heads, int64_t d) {
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

// SwiGLU of `rows` rows: down(silu(gate x) * up x).
inline Matrix swiglu(const Matrix& x, int64_t rows, const std::vector<float>& gate_proj,
                     const std::vector<float>& up_proj, const std::vector<float>& down_proj,
                     int64_t hidden, int64_t inter) {
  const Matrix gate = matmul(x, rows, gate_proj, hidden, inter);
  const Matrix up = matmul(x, rows, up_proj, hidden, inter);
  Matrix act(gate.size());
  for (size_t i = 0; i < act.size(); ++i) act[i] = gate[i] / (1 + std::exp(-gate[i])) * up[i];
  return matmul(act, rows, down_proj, inter, hidden);
}

// x += O(causal GQA attention of RMSNorm(x)) for the n rows of a fresh sequence.
inline void attention_residual(Matrix& x, int64_t n, const LayerWeights& w, const ModelConfig& m,
                               double eps) {
  const int64_t hidden = m.hidden_size, heads = m.num_heads, kv_heads = m.num_kv_heads;
  const int64_t d = m.head_dim;
  const Matrix h = rms_norm(x, n, w.input_layernorm, eps);
  Matrix q = matmul(h, n, w.q_proj, hidden, heads * d);
  Matrix k = matmul(h, n, w.k_proj, hidden, kv_heads * d);
  const Matrix v = matmul(h, n, w.v_proj, hidden, kv_heads * d);
  if (!w.q_norm.empty()) {  // Qwen3: every head RMS-normalised over its d values, before RoPE
    q = rms_norm(q, n * heads, w.q_norm, eps);
    k = rms_norm(k, n * kv_heads, w.k_norm, eps);
  }
  rope(q, n, heads, d);
  rope(k, n, kv_heads, d);
  Matrix attn(static_cast<size_t>(n * heads * d), 0.0);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t head = 0; head < heads; ++head) {
      const int64_t kv = head / (heads / kv_heads);
      std::vector<double> p(static_cast<size_t>(t + 1));
      for (int64_t j = 0; j <= t; ++j) {
        double s = 0;
        for (int64_t i = 0; i < d; ++i) {
          s += q[static_cast<size_t>((t * heads + head) * d + i)] *
               k[static_cast<size_t>((j * kv_heads + kv) * d + i)];
        }
        p[static_cast<size_t>(j)] = s / std::sqrt(static_cast<double>(d));
      }
      const double top = *std::max_element(p.begin(), p.end());
      double total = 0;
      for (double& e : p) total += (e = std::exp(e - top));
      for (int64_t j = 0; j <= t; ++j) {
        for (int64_t i = 0; i < d; ++i) {
          attn[static_cast<size_t>((t * heads + head) * d + i)] +=
              p[static_cast<size_t>(j)] / total *
              v[static_cast<size_t>((j * kv_heads + kv) * d + i)];
        }
      }
    }
  }
  const Matrix o = matmul(attn, n, w.o_proj, heads * d, hidden);
  for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
}

// Every position's logits of `tokens` (a fresh sequence). mlp(x, n, layer) adds the layer's MLP
// half to the residual stream x in place (its RMSNorm included).
template <typename Mlp>
Matrix double_forward_logits(const LlamaConfig& config, const LlamaWeights& weights,
                             const std::vector<int32_t>& tokens, Mlp mlp) {
  const ModelConfig& m = config.model;
  const auto n = static_cast<int64_t>(tokens.size());
  const int64_t hidden = m.hidden_size;
  Matrix x(static_cast<size_t>(n * hidden));
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t i = 0; i < hidden; ++i) {
      x[static_cast<size_t>(t * hidden + i)] =
          weights.embed_tokens[static_cast<size_t>(tokens[static_cast<size_t>(t)] * hidden + i)];
    }
  }
  for (const LayerWeights& w : weights.layers) {
    attention_residual(x, n, w, m, config.rms_norm_eps);
    mlp(x, n, w);
  }
  const Matrix normed = rms_norm(x, n, weights.final_norm, config.rms_norm_eps);
  return matmul(normed, n, weights.output_embedding(), hidden, m.vocab_size);
}

// The engine's fp32 logits against the double forward's: every element within 1e-4 of the
// largest reference logit (or of 1), and that largest logit big enough to tell rows apart.
template <typename Logits>
void expect_logits_match(const Logits& got, const Matrix& want, const std::string& label) {
  ASSERT_EQ(got.size(), want.size()) << label;
  double worst = 0, largest = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
    largest = std::max(largest, std::abs(want[i]));
  }
  EXPECT_GT(largest, 0.1) << label << ": logits too small to tell apart";
  EXPECT_LT(worst, 1e-4 * std::max(1.0, largest)) << label;
}

}  // namespace inferlab::engine::testing
