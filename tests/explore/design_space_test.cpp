#include "explore/design_space.hpp"

#include <gtest/gtest.h>

#include "model/model_config.hpp"
#include "util/error.hpp"
#include "util/field_error.hpp"

namespace inferlab {
namespace {

TEST(DesignSpace, ParetoFrontByHand) {
  std::vector<DesignPoint> p(4);
  p[0].system_cost_usd = 100, p[0].tokens_per_s = 10;  // front: cheapest
  p[1].system_cost_usd = 200, p[1].tokens_per_s = 30;  // front: fastest
  p[2].system_cost_usd = 200, p[2].tokens_per_s = 20;  // dominated by p1
  p[3].system_cost_usd = 150, p[3].tokens_per_s = 0;   // does not run
  mark_pareto_front(p);
  EXPECT_TRUE(p[0].pareto);
  EXPECT_TRUE(p[1].pareto);
  EXPECT_FALSE(p[2].pareto);
  EXPECT_FALSE(p[3].pareto);
}

TEST(DesignSpace, MaxBatchFillsMemoryAndCapacityDecidesFit) {
  ExploreRequest r;
  r.template_name = "h100-sxm";
  r.axes = {{"memory", {"HBM3", "DDR5"}}};
  r.model = load_model("llama-3-8b");
  // "decode:context=2048,batch=max,max_batch=100000"
  r.workload.phase = Phase::decode;
  r.workload.context = 2048;
  r.workload.batch = 0;
  r.workload.max_batch = 100000;
  auto points = explore_designs(r);
  ASSERT_EQ(points.size(), 2u);
  // Llama 3 8B: 16.06 GB of bf16 weights, 128 KiB of KV per token (32 layers x 8 heads x 128
  // x 2 x 2 bytes) -> 2048 tokens = 268.4 MB per sequence. HBM3 5 x 16 GB = 80 GB at 0.9:
  // floor((72 - 16.06) / 0.2684) = 208 sequences.
  EXPECT_EQ(points[0].batch, 208);
  EXPECT_TRUE(points[0].fits);
  // DDR5: 16 x 48 GB = 768 GB -> floor((691.2 - 16.06) / 0.2684) = 2515.
  EXPECT_EQ(points[1].batch, 2515);
  EXPECT_GT(points[1].tokens_per_s, 0.0);
  EXPECT_NEAR(points[0].tokens_per_s, 208 / points[0].step_s, 1e-6);
}

}  // namespace
}  // namespace inferlab
