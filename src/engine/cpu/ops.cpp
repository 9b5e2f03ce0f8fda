#include "engine/cpu/ops.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace inferlab::engine::cpu {

float dot(const float* a, const float* b, int64_t n) {
  float partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) partial[j] += a[i + j] * b[i + j];
  }
  for (; i < n; ++i) partial[i % 8] += a[i] * b[i];
  return ((partial[0] + partial[1]) + (partial[2] + partial[3])) +
         ((partial[4] + partial[5]) + (partial[6] + partial[7]));
}

void rms_norm(const float* x, const float* weight, int64_t n, double eps, float* out) {
  double sum_squares = 0;
  for (int64_t i = 0; i < n; ++i) sum_squares += double{x[i]} * x[i];
  const float scale =
      static_cast<float>(1.0 / std::sqrt(sum_squares / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) out[i] = weight[i] * (x[i] * scale);
}

void linear(const float* x, int64_t rows, const float* weight, const float* bias,
            int64_t in_features, int64_t out_features, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * in_features;
    float* out = y + r * out_features;
    for (int64_t o = 0; o < out_features; ++o) {
      out[o] = dot(row, weight + o * in_features, in_features) + (bias ? bias[o] : 0.0f);
    }
  }
}

void silu_mul(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

namespace {

// One query head over keys/values at positions [first, last], fetched by key_at/value_at.
template <typename KeyAt, typename ValueAt>
void attend_one(const float* q, int64_t first, int64_t last, int64_t head_dim, KeyAt key_at,
                ValueAt value_at, float* out) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  std::vector<double> scores(static_cast<size_t>(last - first + 1));
  double max_score = -std::numeric_limits<double>::infinity();
  for (int64_t p = first; p <= last; ++p) {
    double score = dot(q, key_at(p), head_dim) * scale;
    scores[static_cast<size_t>(p - first)] = score;
    max_score = std::max(max_score, score);
  }
  double total = 0;
  for (double& score : scores) {
    score = std::exp(score - max_score);
    total += score;
  }
  std::vector<double> acc(static_cast<size_t>(head_dim), 0.0);
  for (int64_t p = first; p <= last; ++p) {
    const double weight = scores[static_cast<size_t>(p - first)] / total;
    const float* value = value_at(p);
    for (int64_t d = 0; d < head_dim; ++d) acc[static_cast<size_t>(d)] += weight * value[d];
  }
  for (int64_t d = 0; d < head_dim; ++d) out[d] = static_cast<float>(acc[static_cast<size_t>(d)]);
}

int64_t first_position(int64_t position, int64_t sliding_window) {
  return sliding_window > 0 ? std::max<int64_t>(0, position - sliding_window + 1) : 0;
}

}  // namespace

void causal_attention(const float* q, const float* k, const float* v, int64_t tokens,
                      const AttentionShape& shape, float* out) {
  const int64_t group = shape.num_heads / shape.num_kv_heads;
  const int64_t d = shape.head_dim;
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t h = 0; h < shape.num_heads; ++h) {
      const int64_t kv = h / group;
      attend_one(
          q + (t * shape.num_heads + h) * d, first_position(t, shape.sliding_window), t, d,
          [&](int64_t p) { return k + (p * shape.num_kv_heads + kv) * d; },
          [&](int64_t p) { return v + (p * shape.num_kv_heads + kv) * d; },
          out + (t * shape.num_heads + h) * d);
    }
  }
}

void paged_attention(const float* q, int64_t position, const CpuKvCache& cache, int64_t layer,
                     std::span<const int32_t> block_table, const AttentionShape& shape,
                     float* out) {
  const int64_t group = shape.num_heads / shape.num_kv_heads;
  const int64_t d = shape.head_dim;
  const int64_t block_size = cache.layout().block_size;
  for (int64_t h = 0; h < shape.num_heads; ++h) {
    const int64_t kv = h / group;
    attend_one(
        q + h * d, first_position(position, shape.sliding_window), position, d,
        [&](int64_t p) { return cache.key(layer, kv_slot(block_table, block_size, p)) + kv * d; },
        [&](int64_t p) { return cache.value(layer, kv_slot(block_table, block_size, p)) + kv * d; },
        out + h * d);
  }
}

}  // namespace inferlab::engine::cpu
