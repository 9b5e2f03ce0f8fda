// What a pass's router did (engine/routing_stats.hpp), counted by hand, and recorded by the CPU
// reference for every MoE layer of a pass over all its sequences.
#include "engine/routing_stats.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>
#include <vector>

#include "engine/cpu/cpu_backend.hpp"
#include "engine/cpu/moe.hpp"
#include "engine/cpu/ops.hpp"
#include "engine/init_weights.hpp"
#include "engine/llama_config.hpp"
#include "moe_test_support.hpp"
#include "util/rng.hpp"

namespace inferlab::engine {
namespace {

// Two tokens, top 2 of 4: {0, 1}, {0, 2} load expert 0 twice, 1 and 2 once, 3 never; then a
// layer where both tokens pick {3, 1}.
TEST(RoutingStats, CountsByHand) {
  RoutingStats stats;
  EXPECT_TRUE(stats.empty());
  const std::vector<int32_t> first = {0, 1, 0, 2}, second = {3, 1, 3, 1};
  stats.add_layer(first, 2, 4);
  EXPECT_EQ(stats.layers, 1);
  EXPECT_EQ(stats.tokens, 2);
  EXPECT_EQ(stats.experts_reached_sum, 3);
  EXPECT_EQ(stats.max_rows_sum, 2);
  EXPECT_EQ(stats.sorted_loads_sum, (std::vector<int64_t>{2, 1, 1, 0}));
  stats.add_layer(second, 2, 4);
  EXPECT_EQ(stats.layers, 2);
  EXPECT_DOUBLE_EQ(stats.experts_reached_mean(), 2.5);  // (3 + 2) / 2
  EXPECT_DOUBLE_EQ(stats.max_rows_mean(), 2.0);
  EXPECT_EQ(stats.sorted_loads_sum, (std::vector<int64_t>{4, 3, 1, 0}));
  stats.clear();
  EXPECT_TRUE(stats.empty());
  EXPECT_DOUBLE_EQ(stats.experts_reached_mean(), 0.0);
}

TEST(RoutingStats, RefusesIdsOutsideAndLayersOfAnotherShape) {
  RoutingStats stats;
  const std::vector<int32_t> outside = {0, 4}, negative = {-1, 0}, fine = {0, 1};
  EXPECT_THROW(stats.add_layer(outside, 1, 4), std::invalid_argument);
  EXPECT_THROW(stats.add_layer(negative, 1, 4), std::invalid_argument);
  EXPECT_THROW(stats.add_layer(fine, 1, 0), std::invalid_argument);
  stats.add_layer(fine, 1, 4);
  EXPECT_THROW(stats.add_layer(fine, 1, 8), std::invalid_argument);  // other experts
  EXPECT_THROW(stats.add_layer(fine, 2, 4), std::invalid_argument);  // other tokens
}

// moe_mlp hands back each token's experts as route_token picks them from the router's logits.
TEST(RoutingStats, MoeMlpHandsBackTheExpertsRouteTokenPicks) {
  const LlamaConfig config =
      parse_llama_config(testing::tiny_mixtral_config_json(), "tiny-mixtral", "test");
  const LlamaWeights weights = random_llama_weights(config, 5);
  const ModelConfig& m = config.model;
  const int64_t tokens = 6;
  std::vector<float> x(static_cast<size_t>(tokens * m.hidden_size));
  Xoshiro256 rng(9);
  for (float& v : x) v = static_cast<float>(rng.uniform() * 2.0 - 1.0);
  std::vector<float> out(x.size());
  std::vector<int32_t> chosen;
  cpu::moe_mlp(x.data(), tokens, weights.layers[0], config, out.data(), &chosen);
  ASSERT_EQ(chosen.size(), static_cast<size_t>(tokens * m.experts_per_token));
  std::vector<float> logits(static_cast<size_t>(m.num_experts));
  for (int64_t t = 0; t < tokens; ++t) {
    cpu::linear(&x[static_cast<size_t>(t * m.hidden_size)], 1, weights.layers[0].router.data(),
                nullptr, m.hidden_size, m.num_experts, logits.data());
    const auto choice = cpu::route_token(logits.data(), m.num_experts, m.experts_per_token, true);
    for (int64_t c = 0; c < m.experts_per_token; ++c) {
      EXPECT_EQ(chosen[static_cast<size_t>(t * m.experts_per_token + c)],
                choice.experts[static_cast<size_t>(c)]);
    }
  }
}

// The CPU backend records every layer of a pass over both sequences' tokens (5 + 3): with every
// expert chosen (top 4 of 4) each layer reaches the 4 experts with 8 slots each; with top 2, each
// layer's loads add up to 16 slots over 2 to 4 experts. A dense model records nothing.
TEST(RoutingStats, CpuBackendRecordsEveryLayerOfAPass) {
  auto json = testing::tiny_mixtral_config_json();
  const ForwardBatch batch{{{{3, 9, 27, 81, 50}, 0, {0, 1}, false}, {{7, 8, 9}, 0, {2}, false}}};
  for (int64_t top_k : {4, 2}) {
    json["num_experts_per_tok"] = top_k;
    const LlamaConfig config = parse_llama_config(json, "tiny-mixtral", "test");
    CpuBackend backend(config, random_llama_weights(config, 11), 4, 4);
    backend.forward(batch);
    const RoutingStats stats = backend.last_forward_routing();
    EXPECT_EQ(stats.layers, 2);
    EXPECT_EQ(stats.tokens, 8);
    ASSERT_EQ(stats.sorted_loads_sum.size(), 4u);
    EXPECT_EQ(
        std::accumulate(stats.sorted_loads_sum.begin(), stats.sorted_loads_sum.end(), int64_t{0}),
        2 * 8 * top_k);
    if (top_k == 4) {
      EXPECT_EQ(stats.sorted_loads_sum, (std::vector<int64_t>{16, 16, 16, 16}));
      EXPECT_DOUBLE_EQ(stats.experts_reached_mean(), 4.0);
      EXPECT_DOUBLE_EQ(stats.max_rows_mean(), 8.0);
    } else {
      EXPECT_GE(stats.experts_reached_mean(), 2.0);
      EXPECT_LE(stats.experts_reached_mean(), 4.0);
      // A token picks distinct experts: an expert holds at most the pass's 8 tokens.
      EXPECT_LE(stats.sorted_loads_sum.front(), 2 * 8);
      EXPECT_LE(stats.max_rows_mean(), 8.0);
    }
  }
  json.erase("num_local_experts");
  json.erase("num_experts_per_tok");
  json["model_type"] = "mistral";
  const LlamaConfig dense = parse_llama_config(json, "tiny-dense", "test");
  CpuBackend backend(dense, random_llama_weights(dense, 11), 4, 4);
  backend.forward(batch);
  EXPECT_TRUE(backend.last_forward_routing().empty());
}

}  // namespace
}  // namespace inferlab::engine
