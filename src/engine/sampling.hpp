#pragma once
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "util/rng.hpp"

namespace inferlab::engine {

struct SamplingParams {
  double temperature = 0.0;  // 0: greedy
  int64_t top_k = 0;         // 0: no limit
  double top_p = 1.0;        // 1: no limit
};

// Index of the largest logit, the lowest index among ties (NaN never wins).
int32_t argmax(std::span<const float> logits);

// The tokens sampling may pick and their probabilities, most likely first (ties: lower id
// first), as transformers' warpers do it: softmax(logits / temperature) in double; top_k keeps
// the k most likely; top_p then keeps, of those renormalized, the smallest prefix whose
// probability reaches top_p (at least one token); the kept probabilities renormalized to 1.
std::vector<std::pair<int32_t, double>> sampling_distribution(std::span<const float> logits,
                                                              const SamplingParams& params);

// True when sampling with `params` draws a random number (temperature > 0 and top_k != 1).
bool sampling_draws(const SamplingParams& params);

// The token a uniform draw u in [0, 1) picks from a distribution: the first whose running
// probability exceeds u (the last one when rounding leaves u above the total).
int32_t pick_token(const std::vector<std::pair<int32_t, double>>& distribution, double u);

// The token sampling with `params` picks from one row of logits, drawing from `rng` (greedy: the
// argmax, no draw); `distribution_out`, where given, gets the distribution it was picked from
// (greedy: all mass on the argmax), which speculative verification needs of a draft model.
int32_t sample_token(std::span<const float> logits, const SamplingParams& params, Xoshiro256& rng,
                     std::vector<std::pair<int32_t, double>>* distribution_out = nullptr);

// Draws tokens with its own xoshiro256** generator (seeded once, one uniform draw per sampled
// token, none for greedy): the same seed and logits give the same tokens.
class Sampler {
 public:
  explicit Sampler(uint64_t seed) : rng_(seed) {}
  int32_t sample(std::span<const float> logits, const SamplingParams& params);
  // The draw sample() would make for `params` (0 and no draw when sampling_draws is false), for
  // a backend that samples on the device.
  double draw(const SamplingParams& params) { return sampling_draws(params) ? rng_.uniform() : 0; }

 private:
  Xoshiro256 rng_;
};

}  // namespace inferlab::engine
