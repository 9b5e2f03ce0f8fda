#include "engine/cpu/ops.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <random>
#include <vector>

#include "engine/rope.hpp"
#include "util/rng.hpp"

namespace inferlab::engine {
namespace {

std::vector<float> random_values(size_t n, uint64_t seed) {
  Xoshiro256 rng(seed);
  std::vector<float> values(n);
  for (auto& v : values) v = rng.approx_normal();
  return values;
}

TEST(RmsNorm, HandWorked) {
  // x = (1, 2, 3, 4): mean of squares 30/4 = 7.5; with eps 0.5, 1/sqrt(8) = 0.353553.
  std::vector<float> x = {1, 2, 3, 4}, w = {1, 2, 0.5f, -1}, out(4);
  cpu::rms_norm(x.data(), w.data(), 4, 0.5, out.data());
  const double s = 1 / std::sqrt(8.0);
  EXPECT_NEAR(out[0], 1 * s, 1e-6);
  EXPECT_NEAR(out[1], 4 * s, 1e-6);
  EXPECT_NEAR(out[2], 1.5 * s, 1e-6);
  EXPECT_NEAR(out[3], -4 * s, 1e-6);
  // x = (3, 4), eps 0: mean of squares 12.5, so x / 3.535534 = (0.848528, 1.131371).
  std::vector<float> y = {3, 4}, ones = {1, 1};
  cpu::rms_norm(y.data(), ones.data(), 2, 0.0, y.data());  // in place
  EXPECT_NEAR(y[0], 0.848528, 1e-6);
  EXPECT_NEAR(y[1], 1.131371, 1e-6);
}

TEST(Linear, MatchesHandWorked) {
  // W = [[1, 2], [3, 4], [5, 6]], x = [1, -1]; y = [-1, -1, -1] + bias (1, 2, 3).
  std::vector<float> w = {1, 2, 3, 4, 5, 6}, x = {1, -1, 2, 0}, b = {1, 2, 3}, y(6);
  cpu::linear(x.data(), 2, w.data(), b.data(), 2, 3, y.data());
  EXPECT_EQ(y, (std::vector<float>{0, 1, 2, 3, 8, 13}));
  EXPECT_FLOAT_EQ(
      cpu::dot(std::vector<float>(19, 2.0f).data(), std::vector<float>(19, 0.5f).data(), 19),
      19.0f);
}

TEST(Rope, PlainFrequenciesAndRotation) {
  RopeParams rope;
  rope.theta = 10000;
  auto inv = rope_inverse_frequencies(rope, 4);
  ASSERT_EQ(inv.size(), 2u);
  EXPECT_DOUBLE_EQ(inv[0], 1.0);
  EXPECT_NEAR(inv[1], 0.01, 1e-15);  // 10000^(-2/4)
  // Rotate-half: pairs (x0, x2) and (x1, x3). Position 1: angles 1 and 0.01 rad.
  std::vector<float> x = {1, 2, 3, 4};
  apply_rope(x.data(), 4, 1, inv);
  EXPECT_NEAR(x[0], 1 * std::cos(1.0) - 3 * std::sin(1.0), 1e-6);
  EXPECT_NEAR(x[2], 3 * std::cos(1.0) + 1 * std::sin(1.0), 1e-6);
  EXPECT_NEAR(x[1], 2 * std::cos(0.01) - 4 * std::sin(0.01), 1e-6);
  EXPECT_NEAR(x[3], 4 * std::cos(0.01) + 2 * std::sin(0.01), 1e-6);
  // Position 0 is the identity; a rotation keeps the pair's length.
  std::vector<float> y = {1, 2, 3, 4};
  apply_rope(y.data(), 4, 0, inv);
  EXPECT_EQ(y, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_NEAR(x[0] * x[0] + x[2] * x[2], 10.0, 1e-5);
}

TEST(Rope, Llama3ScalingByHand) {
  // theta 10000, head_dim 8: inv_freq = 1, 0.1, 0.01, 0.001 (wavelengths 2π, 62.83, 628.3,
  // 6283). original 1024, low_freq_factor 1, high_freq_factor 4, factor 8: low-frequency
  // wavelength bound 1024, high-frequency bound 256.
  RopeParams rope;
  rope.kind = RopeParams::Kind::llama3;
  rope.theta = 10000;
  rope.factor = 8;
  rope.low_freq_factor = 1;
  rope.high_freq_factor = 4;
  rope.original_max_position_embeddings = 1024;
  auto inv = rope_inverse_frequencies(rope, 8);
  ASSERT_EQ(inv.size(), 4u);
  EXPECT_NEAR(inv[0], 1.0, 1e-15);  // 6.28 < 256: unchanged
  EXPECT_NEAR(inv[1], 0.1, 1e-15);  // 62.8 < 256: unchanged
  // 628.3 between 256 and 1024: s = (1024 / 628.3185 - 1) / 3 = 0.629747 / 3 = 0.209916;
  // (1 - s) · 0.01 / 8 + s · 0.01 = 0.000987605 + 0.00209916 = 0.00308676.
  const double s = (1024 / (2 * std::numbers::pi / 0.01) - 1) / 3;
  EXPECT_NEAR(s, 0.209916, 1e-6);
  EXPECT_NEAR(inv[2], 0.00308676, 1e-8);
  EXPECT_NEAR(inv[3], 0.001 / 8, 1e-15);  // 6283 > 1024: divided by the factor
  // At position 100 the third pair turns by 0.308676 rad (0.01 · 100 = 1 without scaling).
  std::vector<float> x = {0, 0, 1, 0, 0, 0, 0, 0};
  apply_rope(x.data(), 8, 100, inv);
  EXPECT_NEAR(x[2], std::cos(0.308676), 1e-6);
  EXPECT_NEAR(x[6], std::sin(0.308676), 1e-6);
  // At position 1000 the last pair turns by 0.125 rad (not 1).
  std::vector<float> z = {0, 0, 0, 2, 0, 0, 0, 0};
  apply_rope(z.data(), 8, 1000, inv);
  EXPECT_NEAR(z[3], 2 * std::cos(0.125), 1e-6);
  EXPECT_NEAR(z[7], 2 * std::sin(0.125), 1e-6);
}

TEST(Rope, LinearScalingDividesFrequencies) {
  RopeParams rope;
  rope.kind = RopeParams::Kind::linear;
  rope.theta = 10000;
  rope.factor = 4;
  auto inv = rope_inverse_frequencies(rope, 4);
  EXPECT_DOUBLE_EQ(inv[0], 0.25);
}

TEST(Attention, TwoTokensByHand) {
  // One head, head_dim 2: scale 1/sqrt(2). q0 = (1, 0), q1 = (0, 1); k0 = (1, 1), k1 = (2, 0);
  // v0 = (1, 0), v1 = (0, 3). Token 0 sees only itself: out0 = v0. Token 1: scores q1·k0 = 1,
  // q1·k1 = 0, scaled 0.707107 and 0; softmax (0.669761, 0.330239); out1 = (0.669761, 0.990718).
  std::vector<float> q = {1, 0, 0, 1}, k = {1, 1, 2, 0}, v = {1, 0, 0, 3}, out(4);
  cpu::causal_attention(q.data(), k.data(), v.data(), 2, {1, 1, 2, 0}, out.data());
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_FLOAT_EQ(out[1], 0.0f);
  const double p0 = 1 / (1 + std::exp(-1 / std::sqrt(2.0)));
  EXPECT_NEAR(p0, 0.669761, 1e-6);
  EXPECT_NEAR(out[2], p0, 1e-6);
  EXPECT_NEAR(out[3], 3 * (1 - p0), 1e-6);
}

TEST(Attention, SlidingWindowDropsOldKeys) {
  // Window 1: each token sees only itself, so out = v for every head.
  std::vector<float> q = random_values(3 * 2, 1), k = random_values(3 * 2, 2),
                     v = random_values(3 * 2, 3), out(6);
  cpu::causal_attention(q.data(), k.data(), v.data(), 3, {1, 1, 2, 1}, out.data());
  for (size_t i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(out[i], v[i]);
}

TEST(Attention, GqaEqualsExplicitRepeat) {
  // Two query heads share one KV head: the same as two KV heads holding copies.
  const int64_t tokens = 5, d = 8;
  auto q = random_values(tokens * 2 * d, 4);
  auto k = random_values(tokens * d, 5), v = random_values(tokens * d, 6);
  std::vector<float> k2(tokens * 2 * d), v2(tokens * 2 * d);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t h = 0; h < 2; ++h) {
      for (int64_t i = 0; i < d; ++i) {
        k2[(t * 2 + h) * d + i] = k[t * d + i];
        v2[(t * 2 + h) * d + i] = v[t * d + i];
      }
    }
  }
  std::vector<float> grouped(tokens * 2 * d), repeated(tokens * 2 * d);
  cpu::causal_attention(q.data(), k.data(), v.data(), tokens, {2, 1, d, 0}, grouped.data());
  cpu::causal_attention(q.data(), k2.data(), v2.data(), tokens, {2, 2, d, 0}, repeated.data());
  EXPECT_EQ(grouped, repeated);
}

class PagedAttention : public ::testing::TestWithParam<int64_t> {};

TEST_P(PagedAttention, EqualsContiguous) {
  const int64_t block_size = GetParam();
  const int64_t tokens = 37, heads = 4, kv_heads = 2, d = 16, layers = 2;
  const cpu::AttentionShape shape{heads, kv_heads, d, 0};
  KvCacheLayout layout{layers, kv_heads, d, block_size, 0};
  layout.num_blocks = layout.blocks_for(tokens) + 5;
  CpuKvCache cache(layout);
  // A scattered block table: distinct blocks of the pool in a shuffled order.
  BlockTable table(static_cast<size_t>(layout.num_blocks));
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), std::mt19937(42));
  table.resize(static_cast<size_t>(layout.blocks_for(tokens)));
  auto q = random_values(tokens * heads * d, 7);
  auto k = random_values(tokens * kv_heads * d, 8), v = random_values(tokens * kv_heads * d, 9);
  const int64_t layer = 1;
  auto slots = slot_mapping(table, block_size, 0, tokens);
  for (int64_t t = 0; t < tokens; ++t) {
    std::copy_n(&k[t * kv_heads * d], kv_heads * d, cache.key(layer, slots[t]));
    std::copy_n(&v[t * kv_heads * d], kv_heads * d, cache.value(layer, slots[t]));
  }
  std::vector<float> contiguous(tokens * heads * d), paged(tokens * heads * d);
  cpu::causal_attention(q.data(), k.data(), v.data(), tokens, shape, contiguous.data());
  for (int64_t t = 0; t < tokens; ++t) {
    cpu::paged_attention(&q[t * heads * d], t, cache, layer, table, shape, &paged[t * heads * d]);
  }
  EXPECT_EQ(paged, contiguous);
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, PagedAttention, ::testing::Values(1, 3, 16));

TEST(KvCache, SlotMappingAndAllocator) {
  BlockTable table = {5, 2, 9};
  EXPECT_EQ(kv_slot(table, 4, 0), 20);
  EXPECT_EQ(kv_slot(table, 4, 5), 9);
  EXPECT_EQ(slot_mapping(table, 4, 3, 3), (std::vector<int64_t>{23, 8, 9}));
  EXPECT_THROW(slot_mapping(table, 4, 10, 3), std::invalid_argument);

  BlockAllocator allocator(3);
  BlockTable a, b;
  EXPECT_TRUE(allocator.grow(a, 5, 4));  // 2 blocks
  EXPECT_EQ(a, (BlockTable{0, 1}));
  EXPECT_FALSE(allocator.grow(b, 9, 4));  // needs 3, 1 left: no change
  EXPECT_TRUE(b.empty());
  EXPECT_TRUE(allocator.grow(b, 4, 4));
  EXPECT_EQ(allocator.free_blocks(), 0);
  allocator.release(a);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(allocator.free_blocks(), 2);
}

}  // namespace
}  // namespace inferlab::engine
