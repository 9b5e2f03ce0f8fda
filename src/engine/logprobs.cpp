#include "engine/logprobs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace inferlab::engine {

namespace {

float logprob_of(float logit, double lse) {
  return static_cast<float>(static_cast<double>(logit) - lse);
}

}  // namespace

double log_sum_exp(std::span<const float> logits) {
  float max_logit = -std::numeric_limits<float>::infinity();
  for (float logit : logits) {
    if (logit > max_logit) max_logit = logit;  // NaN never compares greater
  }
  if (std::isinf(max_logit)) return max_logit;  // all -inf (or +inf present)
  double sum = 0;
  for (float logit : logits) {
    if (!std::isnan(logit)) sum += std::exp(static_cast<double>(logit - max_logit));
  }
  return static_cast<double>(max_logit) + std::log(sum);
}

void log_softmax(std::span<const float> logits, std::span<float> out) {
  if (out.size() != logits.size()) throw std::invalid_argument("log_softmax: sizes differ");
  const double lse = log_sum_exp(logits);
  for (size_t i = 0; i < logits.size(); ++i) out[i] = logprob_of(logits[i], lse);
}

PositionLogprobs position_logprobs(std::span<const float> logits, int32_t token, int top) {
  if (token < 0 || static_cast<size_t>(token) >= logits.size()) {
    throw std::invalid_argument("position_logprobs: token outside the row");
  }
  const double lse = log_sum_exp(logits);
  PositionLogprobs out;
  out.chosen = {token, logprob_of(logits[static_cast<size_t>(token)], lse)};
  const auto k = static_cast<size_t>(std::clamp(top, 0, static_cast<int>(logits.size())));
  if (k == 0) return out;
  // The k largest logits in one pass: `best` stays sorted (largest first); ids come in
  // ascending order, so a tie never displaces the lower id already kept.
  std::vector<int32_t> best;
  best.reserve(k + 1);
  for (size_t i = 0; i < logits.size(); ++i) {
    const float x = logits[i];
    if (std::isnan(x)) continue;
    if (best.size() == k && !(x > logits[static_cast<size_t>(best.back())])) continue;
    auto at = std::upper_bound(best.begin(), best.end(), x, [&](float value, int32_t id) {
      return value > logits[static_cast<size_t>(id)];
    });
    best.insert(at, static_cast<int32_t>(i));
    if (best.size() > k) best.pop_back();
  }
  out.top.reserve(best.size());
  for (int32_t id : best) out.top.push_back({id, logprob_of(logits[static_cast<size_t>(id)], lse)});
  return out;
}

}  // namespace inferlab::engine
