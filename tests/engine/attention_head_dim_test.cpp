// The CPU reference attention at head_dim 192 and 256 (the sizes the CUDA kernels gained beside
// 64 and 128) against a plain double-precision softmax(Q Kᵀ / sqrt(d)) V written here, a case
// worked by hand and a random GQA one; and the rule for which head sizes the CUDA engine takes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "engine/attention_head_dims.hpp"
#include "engine/cpu/ops.hpp"
#include "engine/kv_cache.hpp"

namespace inferlab::engine {
namespace {

std::vector<float> uniform_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<float> values(n);
  for (float& x : values) x = unit(rng);
  return values;
}

// softmax(q·k_j / sqrt(d)) over j in [first, t], times V, in double: q [tokens, heads, d], k and
// v [tokens, kv_heads, d]; query head h reads KV head h / (heads / kv_heads).
std::vector<double> reference_attention(const std::vector<float>& q, const std::vector<float>& k,
                                        const std::vector<float>& v, int64_t tokens, int64_t heads,
                                        int64_t kv_heads, int64_t d, int64_t window) {
  std::vector<double> out(static_cast<size_t>(tokens * heads * d), 0.0);
  const int64_t group = heads / kv_heads;
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t first = window > 0 ? std::max<int64_t>(0, t - window + 1) : 0;
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t kv = h / group;
      const float* qr = &q[static_cast<size_t>((t * heads + h) * d)];
      std::vector<double> scores;
      for (int64_t j = first; j <= t; ++j) {
        const float* kr = &k[static_cast<size_t>((j * kv_heads + kv) * d)];
        double s = 0;
        for (int64_t i = 0; i < d; ++i) s += double{qr[i]} * kr[i];
        scores.push_back(s / std::sqrt(static_cast<double>(d)));
      }
      const double top = *std::max_element(scores.begin(), scores.end());
      double total = 0;
      for (double& s : scores) total += (s = std::exp(s - top));
      double* o = &out[static_cast<size_t>((t * heads + h) * d)];
      for (int64_t j = first; j <= t; ++j) {
        const float* vr = &v[static_cast<size_t>((j * kv_heads + kv) * d)];
        const double w = scores[static_cast<size_t>(j - first)] / total;
        for (int64_t i = 0; i < d; ++i) o[i] += w * vr[i];
      }
    }
  }
  return out;
}

// The same tokens through cpu::paged_attention: keys and values stored in a CpuKvCache through a
// shuffled block table of blocks of `block_size`, one query token at a time.
std::vector<float> paged(const std::vector<float>& q, const std::vector<float>& k,
                         const std::vector<float>& v, int64_t tokens,
                         const cpu::AttentionShape& shape, int64_t block_size) {
  const int64_t heads = shape.num_heads, kv_heads = shape.num_kv_heads, d = shape.head_dim;
  KvCacheLayout layout{1, kv_heads, d, block_size, 0};
  layout.num_blocks = layout.blocks_for(tokens) + 2;
  CpuKvCache cache(layout);
  BlockTable table(static_cast<size_t>(layout.num_blocks));
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), std::mt19937(5));
  table.resize(static_cast<size_t>(layout.blocks_for(tokens)));
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t slot = kv_slot(table, block_size, t);
    std::copy_n(&k[static_cast<size_t>(t * kv_heads * d)], kv_heads * d, cache.key(0, slot));
    std::copy_n(&v[static_cast<size_t>(t * kv_heads * d)], kv_heads * d, cache.value(0, slot));
  }
  std::vector<float> out(static_cast<size_t>(tokens * heads * d));
  for (int64_t t = 0; t < tokens; ++t) {
    cpu::paged_attention(&q[static_cast<size_t>(t * heads * d)], t, cache, 0, table, shape,
                         &out[static_cast<size_t>(t * heads * d)]);
  }
  return out;
}

class CpuAttentionHeadDim : public ::testing::TestWithParam<int64_t> {};

INSTANTIATE_TEST_SUITE_P(CpuAttention, CpuAttentionHeadDim, ::testing::Values(192, 256),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           return "HeadDim" + std::to_string(info.param);
                         });

// Two tokens, one head, by hand: token 0 sees only (k0, v0), so it outputs v0 = 1 everywhere.
// Token 1 has q1 = sqrt(d) e0 against k0 = 0 and k1 = e0: scores 0 and sqrt(d) / sqrt(d) = 1, so
// it outputs (v0 + e v1) / (1 + e) = (1 - e) / (1 + e) = -tanh(1/2) with v1 = -1 everywhere.
TEST_P(CpuAttentionHeadDim, TwoTokensByHand) {
  const int64_t d = GetParam();
  const auto n = static_cast<size_t>(d);
  std::vector<float> q(2 * n, 0.0f), k(2 * n, 0.0f), v(2 * n, 1.0f);
  q[0] = 0.5f;  // token 0's query: it sees one key whatever it is
  q[n] = static_cast<float>(std::sqrt(static_cast<double>(d)));
  k[n] = 1.0f;
  std::fill(v.begin() + static_cast<ptrdiff_t>(n), v.end(), -1.0f);
  const cpu::AttentionShape shape{1, 1, d, 0};
  std::vector<float> contiguous(2 * n);
  cpu::causal_attention(q.data(), k.data(), v.data(), 2, shape, contiguous.data());
  const std::vector<float> by_pages = paged(q, k, v, 2, shape, 1);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(contiguous[i], 1.0f) << i;
    EXPECT_NEAR(contiguous[n + i], -std::tanh(0.5), 1e-6) << i;
    EXPECT_EQ(by_pages[i], contiguous[i]) << i;
    EXPECT_EQ(by_pages[n + i], contiguous[n + i]) << i;
  }
}

// Random queries, keys and values, 8 query heads over 2 KV heads (group 4), 21 tokens, with and
// without a sliding window: causal_attention and paged_attention (blocks of 16 and of 5) within
// fp32 rounding of the double reference.
TEST_P(CpuAttentionHeadDim, RandomGqaMatchesDoubleReference) {
  const int64_t d = GetParam(), tokens = 21, heads = 8, kv_heads = 2;
  const auto q = uniform_values(static_cast<size_t>(tokens * heads * d), 1);
  const auto k = uniform_values(static_cast<size_t>(tokens * kv_heads * d), 2);
  const auto v = uniform_values(static_cast<size_t>(tokens * kv_heads * d), 3);
  for (int64_t window : {0, 6}) {
    const cpu::AttentionShape shape{heads, kv_heads, d, window};
    const auto want = reference_attention(q, k, v, tokens, heads, kv_heads, d, window);
    std::vector<float> got(want.size());
    cpu::causal_attention(q.data(), k.data(), v.data(), tokens, shape, got.data());
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
    EXPECT_LT(worst, 2e-6) << "causal_attention, window " << window;
    for (int64_t block_size : {16, 5}) {
      EXPECT_EQ(paged(q, k, v, tokens, shape, block_size), got)
          << "paged_attention, blocks of " << block_size << ", window " << window;
    }
  }
}

TEST(AttentionHeadDims, MultiplesOf64UpTo256) {
  for (int64_t d : {64, 128, 192, 256}) EXPECT_TRUE(attention_head_dim_supported(d)) << d;
  for (int64_t d : {0, 16, 32, 80, 96, 100, 160, 320, 384, 512}) {
    EXPECT_FALSE(attention_head_dim_supported(d)) << d;
  }
  const std::string message = attention_head_dim_problem(96);
  EXPECT_NE(message.find("head_dim 96"), std::string::npos) << message;
  EXPECT_NE(message.find("64, 128, 192 or 256"), std::string::npos) << message;
}

}  // namespace
}  // namespace inferlab::engine
