#include "engine/quant/smoothquant.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "engine/bf16.hpp"
#include "util/rng.hpp"

namespace inferlab::engine {

SmoothQuantStats SmoothQuantStats::zeros(int64_t layers, int64_t hidden) {
  const std::vector<std::vector<float>> empty(static_cast<size_t>(layers),
                                              std::vector<float>(static_cast<size_t>(hidden), 0));
  return {empty, empty, empty, empty};
}

void SmoothQuantStats::merge(const SmoothQuantStats& other) {
  auto merge_one = [](std::vector<std::vector<float>>& into,
                      const std::vector<std::vector<float>>& from) {
    if (into.empty()) {
      into = from;
      return;
    }
    if (from.size() != into.size()) throw std::invalid_argument("SmoothQuantStats: layer counts");
    for (size_t l = 0; l < into.size(); ++l) {
      if (from[l].size() != into[l].size()) throw std::invalid_argument("SmoothQuantStats: widths");
      for (size_t j = 0; j < into[l].size(); ++j) into[l][j] = std::max(into[l][j], from[l][j]);
    }
  };
  merge_one(qkv_input, other.qkv_input);
  merge_one(gate_up_input, other.gate_up_input);
  merge_one(qkv_weight, other.qkv_weight);
  merge_one(gate_up_weight, other.gate_up_weight);
}

namespace {

std::vector<std::vector<float>> factors_of(const std::vector<std::vector<float>>& x,
                                           const std::vector<std::vector<float>>& w, double alpha) {
  if (x.size() != w.size()) throw std::invalid_argument("smoothing_factors: layer counts differ");
  std::vector<std::vector<float>> s(x.size());
  for (size_t l = 0; l < x.size(); ++l) {
    if (x[l].size() != w[l].size()) throw std::invalid_argument("smoothing_factors: widths");
    s[l].resize(x[l].size());
    for (size_t j = 0; j < x[l].size(); ++j) {
      const double a = std::max<double>(x[l][j], 1e-5), b = std::max<double>(w[l][j], 1e-5);
      const double factor = std::pow(a, alpha) / std::pow(b, 1.0 - alpha);
      s[l][j] = static_cast<float>(std::clamp(factor, 1e-3, 1e3));
    }
  }
  return s;
}

}  // namespace

SmoothingFactors smoothing_factors(const SmoothQuantStats& stats, double alpha) {
  if (!(alpha >= 0 && alpha <= 1)) throw std::invalid_argument("smoothing_factors: alpha");
  return {factors_of(stats.qkv_input, stats.qkv_weight, alpha),
          factors_of(stats.gate_up_input, stats.gate_up_weight, alpha)};
}

void scale_weight_columns(float* weight, int64_t out, int64_t hidden, const std::vector<float>& s) {
  if (static_cast<int64_t>(s.size()) != hidden) {
    throw std::invalid_argument("scale_weight_columns: one factor per column is needed");
  }
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t j = 0; j < hidden; ++j) weight[o * hidden + j] *= s[j];
  }
}

void divide_norm_weight(float* norm_weight, int64_t hidden, const std::vector<float>& s) {
  if (static_cast<int64_t>(s.size()) != hidden) {
    throw std::invalid_argument("divide_norm_weight: one factor per channel is needed");
  }
  for (int64_t j = 0; j < hidden; ++j) {
    norm_weight[j] = bf16_to_float(float_to_bf16(norm_weight[j] / s[j]));
  }
}

std::vector<int32_t> calibration_tokens(int64_t vocab, int64_t count, uint64_t seed) {
  Xoshiro256 rng(seed);
  std::vector<int32_t> tokens(static_cast<size_t>(count));
  for (auto& t : tokens) t = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(vocab));
  return tokens;
}

void merge_column_absmax(const float* matrix, int64_t rows, int64_t cols,
                         std::vector<float>& maxima) {
  if (static_cast<int64_t>(maxima.size()) != cols) {
    throw std::invalid_argument("merge_column_absmax: one maximum per column is needed");
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      maxima[c] = std::max(maxima[c], std::fabs(matrix[r * cols + c]));
    }
  }
}

}  // namespace inferlab::engine
