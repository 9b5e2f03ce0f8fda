#include "engine/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace inferlab::engine {

int32_t argmax(std::span<const float> logits) {
  if (logits.empty()) throw std::invalid_argument("argmax: no logits");
  size_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best] || (std::isnan(logits[best]) && !std::isnan(logits[i]))) best = i;
  }
  return static_cast<int32_t>(best);
}

std::vector<std::pair<int32_t, double>> sampling_distribution(std::span<const float> logits,
                                                              const SamplingParams& params) {
  if (logits.empty()) throw std::invalid_argument("sampling: no logits");
  if (!(params.temperature > 0)) return {{argmax(logits), 1.0}};
  double max_logit = -std::numeric_limits<double>::infinity();
  for (float logit : logits) {
    if (!std::isnan(logit)) max_logit = std::max(max_logit, double{logit});
  }
  std::vector<std::pair<int32_t, double>> probs;
  probs.reserve(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    double p = std::isnan(logits[i]) ? 0.0 : std::exp((logits[i] - max_logit) / params.temperature);
    probs.emplace_back(static_cast<int32_t>(i), p);
  }
  std::stable_sort(probs.begin(), probs.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  auto normalize = [&probs] {
    double total = 0;
    for (const auto& entry : probs) total += entry.second;
    for (auto& entry : probs) entry.second /= total;
  };
  if (params.top_k > 0 && static_cast<size_t>(params.top_k) < probs.size()) {
    probs.resize(static_cast<size_t>(params.top_k));
  }
  normalize();
  if (params.top_p < 1.0) {
    double cumulative = 0;
    size_t keep = 0;
    while (keep < probs.size() && (keep == 0 || cumulative < params.top_p)) {
      cumulative += probs[keep].second;
      ++keep;
    }
    probs.resize(keep);
    normalize();
  }
  return probs;
}

bool sampling_draws(const SamplingParams& params) {
  return params.temperature > 0 && params.top_k != 1;
}

int32_t pick_token(const std::vector<std::pair<int32_t, double>>& distribution, double u) {
  if (distribution.empty()) throw std::invalid_argument("pick_token: empty distribution");
  double cumulative = 0;
  for (const auto& [token, p] : distribution) {
    cumulative += p;
    if (u < cumulative) return token;
  }
  return distribution.back().first;
}

int32_t sample_token(std::span<const float> logits, const SamplingParams& params, Xoshiro256& rng,
                     std::vector<std::pair<int32_t, double>>* distribution_out) {
  if (!sampling_draws(params)) {
    const int32_t best = argmax(logits);
    if (distribution_out != nullptr) *distribution_out = {{best, 1.0}};
    return best;
  }
  auto distribution = sampling_distribution(logits, params);
  const int32_t token = pick_token(distribution, rng.uniform());
  if (distribution_out != nullptr) *distribution_out = std::move(distribution);
  return token;
}

int32_t Sampler::sample(std::span<const float> logits, const SamplingParams& params) {
  if (!sampling_draws(params)) return argmax(logits);
  const auto distribution = sampling_distribution(logits, params);
  return pick_token(distribution, rng_.uniform());
}

}  // namespace inferlab::engine
