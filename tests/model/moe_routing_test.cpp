// A mixture of experts' measured routing (model/moe_routing.hpp): the experts a step reaches
// from what one sequence reaches, worked by hand; malformed routing files refused.
#include "model/moe_routing.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "model/model_config.hpp"
#include "model/step_graph.hpp"
#include "util/error.hpp"

namespace inferlab {
namespace {

ModelConfig moe_of(int64_t experts, int64_t top_k) {
  ModelConfig m;
  m.name = "test-moe";
  m.num_experts = experts;
  m.experts_per_token = top_k;
  return m;
}

nlohmann::json routing_of(int64_t experts, int64_t top_k, const nlohmann::json& reached) {
  return {{"num_experts", experts},
          {"experts_per_token", top_k},
          {"sequence_experts_reached", reached},
          {"source", "by hand"}};
}

// Unmeasured, sequences of t tokens route as b t independent tokens.
TEST(MoeRouting, WithoutAMeasurementRoutingIsUniform) {
  const ModelConfig m = moe_of(8, 2);
  for (int64_t b : {1, 4, 32}) {
    for (int64_t t : {1, 3, 100}) {
      EXPECT_NEAR(expected_active_experts(m, b, t), 8.0 * (1.0 - std::pow(0.75, b * t)), 1e-9);
    }
  }
  EXPECT_NEAR(sequence_experts_reached(m, 2), 8.0 * (1.0 - 0.75 * 0.75), 1e-12);
}

// 128 experts, top 8, measured: 32 experts at 128 tokens, 48 at 2048. One token reaches 8; 512
// tokens lie halfway between 128 and 2048 in log: 40; past 2048: 48. Two sequences of 512
// tokens: 128 (1 - (88/128)^2) = 67.5; decode (1 token each) stays uniform routing's.
TEST(MoeRouting, MeasuredSequencesCombineAsIndependentDraws) {
  ModelConfig m = moe_of(128, 8);
  attach_moe_routing(routing_of(128, 8, {{128, 32.0}, {2048, 48.0}}), m, "test");
  EXPECT_EQ(m.moe_routing_source, "by hand");
  EXPECT_DOUBLE_EQ(sequence_experts_reached(m, 1), 8.0);
  EXPECT_DOUBLE_EQ(sequence_experts_reached(m, 128), 32.0);
  EXPECT_NEAR(sequence_experts_reached(m, 512), 40.0, 1e-9);
  EXPECT_DOUBLE_EQ(sequence_experts_reached(m, 4096), 48.0);
  // Between one token (8) and 128 tokens (32): 8 + 24 log(t) / log(128).
  EXPECT_NEAR(sequence_experts_reached(m, 11), 8.0 + 24.0 * std::log(11.0) / std::log(128.0), 1e-9);
  EXPECT_NEAR(expected_active_experts(m, 2, 512), 67.5, 1e-9);
  EXPECT_NEAR(expected_active_experts(m, 64, 1), 128.0 * (1.0 - std::pow(120.0 / 128.0, 64)), 1e-9);
}

TEST(MoeRouting, MalformedRoutingIsRefused) {
  ModelConfig m = moe_of(4, 2);
  EXPECT_NO_THROW(attach_moe_routing(routing_of(4, 2, {{16, 3.5}}), m, "test"));
  auto refused = [&](const nlohmann::json& j, const std::string& says) {
    ModelConfig copy = moe_of(4, 2);
    try {
      attach_moe_routing(j, copy, "routing 'x.json'");
      ADD_FAILURE() << "accepted " << j.dump();
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("routing 'x.json'"), std::string::npos);
    }
    EXPECT_TRUE(copy.moe_sequence_reached.empty());
  };
  refused(routing_of(8, 2, {{16, 3.5}}), "for a model of 2 of 4");
  refused(routing_of(4, 1, {{16, 3.5}}), "for a model of 2 of 4");
  refused(routing_of(4, 2, nlohmann::json::array()), "missing non-empty array");
  refused(routing_of(4, 2, {{16, 3.5}, {16, 3.6}}), "increasing counts");
  refused(routing_of(4, 2, {{0, 2.0}}), "increasing counts");
  refused(routing_of(4, 2, {{16, 4.5}}), "cannot reach");  // more than the 4 experts
  refused(routing_of(4, 2, {{16, 1.5}}), "cannot reach");  // fewer than top_k
  refused(routing_of(4, 2, {{1, 3.0}}), "cannot reach");   // one token reaches top_k at most
  refused(routing_of(4, 2, {{16, "three"}}), "[tokens, experts]");
  refused(routing_of(4, 2, {16, 3.5}), "[tokens, experts]");
  refused(nlohmann::json::array(), "not a JSON object");
  nlohmann::json missing = routing_of(4, 2, {{16, 3.5}});
  missing["num_experts"] = "four";
  refused(missing, "missing integer field 'num_experts'");
}

}  // namespace
}  // namespace inferlab
