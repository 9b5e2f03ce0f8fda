// Log-softmax and the top logprobs of a row: probabilities that sum to 1, stable at any scale,
// the k most likely in order, and the same fp32 value for a token wherever it is reported.
#include "engine/logprobs.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "engine/sampling.hpp"
#include "util/rng.hpp"

namespace inferlab::engine {
namespace {

std::vector<float> random_logits(size_t vocab, double scale, uint64_t seed) {
  Xoshiro256 rng(seed);
  std::vector<float> logits(vocab);
  for (float& x : logits) x = static_cast<float>(scale * (2 * rng.uniform() - 1));
  return logits;
}

TEST(Logprobs, LogSoftmaxSumsToOneOverTheVocabulary) {
  for (double scale : {0.1, 10.0, 1e4}) {
    const auto logits = random_logits(128256, scale, 7);
    std::vector<float> out(logits.size());
    log_softmax(logits, out);
    double total = 0;
    for (float lp : out) {
      EXPECT_LE(lp, 0.0f);
      total += std::exp(static_cast<double>(lp));
    }
    EXPECT_NEAR(total, 1.0, 1e-4) << "scale " << scale;
  }
}

TEST(Logprobs, LogSoftmaxIsStableWhereExpOverflows) {
  // exp(1000) overflows float and double: the largest logit comes out first.
  const std::vector<float> logits = {1000.0f, 1000.0f, -1000.0f};
  std::vector<float> out(3);
  log_softmax(logits, out);
  EXPECT_FLOAT_EQ(out[0], -std::log(2.0f));
  EXPECT_FLOAT_EQ(out[1], -std::log(2.0f));
  EXPECT_FLOAT_EQ(out[2], -2000.0f - std::log(2.0f));
  // -inf: probability 0; NaN is left out of the sum.
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> odd = {0.0f, -inf, NAN, 0.0f};
  std::vector<float> odd_out(4);
  log_softmax(odd, odd_out);
  EXPECT_FLOAT_EQ(odd_out[0], -std::log(2.0f));
  EXPECT_EQ(odd_out[1], -inf);
  EXPECT_FLOAT_EQ(odd_out[3], -std::log(2.0f));
  EXPECT_THROW(log_softmax(odd, std::span<float>(odd_out.data(), 3)), std::invalid_argument);
}

TEST(Logprobs, TopLogprobsAreTheKMostLikelyInOrder) {
  const auto logits = random_logits(5000, 5.0, 11);
  std::vector<float> all(logits.size());
  log_softmax(logits, all);
  for (int k : {0, 1, 5, 20}) {
    const PositionLogprobs p = position_logprobs(logits, 42, k);
    EXPECT_EQ(p.chosen.token, 42);
    EXPECT_EQ(p.chosen.logprob, all[42]);  // the same fp32 value, not just close
    ASSERT_EQ(p.top.size(), static_cast<size_t>(k));
    // Sorted, each the log-softmax of its token, and nothing outside is more likely.
    for (size_t i = 0; i < p.top.size(); ++i) {
      EXPECT_EQ(p.top[i].logprob, all[static_cast<size_t>(p.top[i].token)]);
      if (i > 0) EXPECT_GE(p.top[i - 1].logprob, p.top[i].logprob);
    }
    if (k > 0) {
      int bigger = 0;
      for (float lp : all) bigger += lp > p.top.back().logprob;
      EXPECT_EQ(bigger, k - 1);
    }
  }
  // Greedy: the argmax's logprob is top[0]'s exactly.
  const int32_t best = argmax(logits);
  const PositionLogprobs greedy = position_logprobs(logits, best, 3);
  EXPECT_EQ(greedy.top[0].token, best);
  EXPECT_EQ(greedy.chosen.logprob, greedy.top[0].logprob);
}

TEST(Logprobs, TiesKeepTheLowerIdAndKIsCappedByTheVocabulary) {
  const std::vector<float> logits = {1.0f, 3.0f, NAN, 3.0f, 2.0f, 3.0f};
  const PositionLogprobs p = position_logprobs(logits, 0, 3);
  ASSERT_EQ(p.top.size(), 3u);
  EXPECT_EQ(p.top[0].token, 1);
  EXPECT_EQ(p.top[1].token, 3);
  EXPECT_EQ(p.top[2].token, 5);
  // More than the vocabulary: every token that is a number, NaN left out.
  const PositionLogprobs all = position_logprobs(logits, 4, 20);
  ASSERT_EQ(all.top.size(), 5u);
  EXPECT_EQ(all.top[3].token, 4);
  EXPECT_EQ(all.top[4].token, 0);
  EXPECT_THROW(position_logprobs(logits, 6, 1), std::invalid_argument);
}

}  // namespace
}  // namespace inferlab::engine
