#pragma once
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "engine/rng.hpp"

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

// Draws tokens with its own xoshiro256** generator (seeded once, one uniform draw per sampled
// token, none for greedy): the same seed and logits give the same tokens.
class Sampler {
 public:
  explicit Sampler(uint64_t seed) : rng_(seed) {}
  int32_t sample(std::span<const float> logits, const SamplingParams& params);

 private:
  Xoshiro256 rng_;
};

}  // namespace inferlab::engine
