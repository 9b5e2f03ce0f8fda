#include "engine/sampling.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace inferlab::engine {
namespace {

std::vector<float> log_probs(const std::vector<double>& probs) {
  std::vector<float> logits;
  for (double p : probs) logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

TEST(Sampling, GreedyIsArgmaxLowestIndexOnTies) {
  std::vector<float> logits = {0.1f, 3.0f, -1.0f, 3.0f};
  EXPECT_EQ(argmax(logits), 1);
  Sampler sampler(1);
  EXPECT_EQ(sampler.sample(logits, {}), 1);
  EXPECT_EQ(argmax(std::vector<float>{NAN, 1.0f, 2.0f}), 2);
}

TEST(Sampling, TopKOneEqualsGreedy) {
  std::vector<float> logits = {0.3f, 1.2f, 1.1f, -0.5f, 0.9f};
  Sampler sampler(123);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(sampler.sample(logits, {1.5, 1, 1.0}), argmax(logits));
  }
  auto distribution = sampling_distribution(logits, {1.5, 1, 1.0});
  ASSERT_EQ(distribution.size(), 1u);
  EXPECT_EQ(distribution[0].first, 1);
}

TEST(Sampling, TopPKeepsSmallestSetReachingP) {
  // Probabilities 0.1, 0.4, 0.2, 0.3 (tokens 0..3). Sorted: 1 (0.4), 3 (0.3), 2 (0.2), 0 (0.1).
  auto logits = log_probs({0.1, 0.4, 0.2, 0.3});
  // top_p 0.6: 0.4 < 0.6, 0.4 + 0.3 = 0.7 ≥ 0.6 → {1, 3}, renormalized 4/7 and 3/7.
  auto kept = sampling_distribution(logits, {1.0, 0, 0.6});
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].first, 1);
  EXPECT_EQ(kept[1].first, 3);
  EXPECT_NEAR(kept[0].second, 4.0 / 7, 1e-6);
  EXPECT_NEAR(kept[1].second, 3.0 / 7, 1e-6);
  // top_p 0.75: 0.7 < 0.75 → the 0.2 token too.
  EXPECT_EQ(sampling_distribution(logits, {1.0, 0, 0.75}).size(), 3u);
  // top_p 0.3: the most likely token alone already reaches it.
  EXPECT_EQ(sampling_distribution(logits, {1.0, 0, 0.3}).size(), 1u);
  // top_k 3 first (drops 0.1, renormalizes to 4/9, 3/9, 2/9), then top_p 0.7: 4/9 + 3/9 ≥ 0.7.
  auto both = sampling_distribution(logits, {1.0, 3, 0.7});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_NEAR(both[0].second, 4.0 / 7, 1e-6);
  // Sampling never leaves the kept set.
  Sampler sampler(5);
  for (int i = 0; i < 200; ++i) {
    int32_t token = sampler.sample(logits, {1.0, 0, 0.6});
    EXPECT_TRUE(token == 1 || token == 3);
  }
}

TEST(Sampling, TemperatureSharpensAndFlattens) {
  auto logits = log_probs({0.25, 0.75});
  // T = 0.5 squares the odds: 1 : 9.
  auto sharp = sampling_distribution(logits, {0.5, 0, 1.0});
  EXPECT_NEAR(sharp[0].second, 0.9, 1e-6);
  // T = 2: odds sqrt(3) : 1.
  auto flat = sampling_distribution(logits, {2.0, 0, 1.0});
  EXPECT_NEAR(flat[0].second, std::sqrt(3.0) / (1 + std::sqrt(3.0)), 1e-6);
}

TEST(Sampling, SameSeedSameTokensAndFrequencies) {
  auto logits = log_probs({0.1, 0.4, 0.2, 0.3});
  Sampler a(99), b(99), c(100);
  std::vector<int32_t> from_a, from_b, from_c;
  std::vector<int> counts(4, 0);
  for (int i = 0; i < 4000; ++i) {
    from_a.push_back(a.sample(logits, {1.0, 0, 1.0}));
    from_b.push_back(b.sample(logits, {1.0, 0, 1.0}));
    from_c.push_back(c.sample(logits, {1.0, 0, 1.0}));
    ++counts[static_cast<size_t>(from_a.back())];
  }
  EXPECT_EQ(from_a, from_b);
  EXPECT_NE(from_a, from_c);
  EXPECT_NEAR(counts[0] / 4000.0, 0.1, 0.02);
  EXPECT_NEAR(counts[1] / 4000.0, 0.4, 0.03);
  EXPECT_NEAR(counts[3] / 4000.0, 0.3, 0.03);
}

}  // namespace
}  // namespace inferlab::engine
