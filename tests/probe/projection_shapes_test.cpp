#include "probe/projection_shapes.hpp"

#include <gtest/gtest.h>

#include <set>

namespace inferlab {
namespace {

// The probe's own sweep needs no model file, but its widths must be the shipped configs'.
TEST(ProjectionShapes, DefaultSweepMatchesTheShippedConfigs) {
  std::set<std::string> models;
  for (const auto& shape : probe::default_projections(false)) models.insert(shape.model);
  EXPECT_EQ(models, (std::set<std::string>{"llama-3.2-1b", "llama-3.2-3b", "llama-3-8b",
                                           "llama-3-70b", "qwen2.5-7b"}));
  auto expected = [](const std::string& name) {
    return probe::model_projections(name, load_model(name));
  };
  std::vector<probe::ProjectionShape> from_configs;
  for (const char* name :
       {"llama-3.2-1b", "llama-3.2-3b", "llama-3-8b", "llama-3-70b", "qwen2.5-7b"}) {
    auto layer = expected(name);
    from_configs.insert(from_configs.end(), layer.begin(), layer.end());
  }
  auto swept = probe::default_projections(false);
  ASSERT_EQ(swept.size(), from_configs.size());
  for (size_t i = 0; i < swept.size(); ++i) {
    EXPECT_EQ(swept[i].model, from_configs[i].model);
    EXPECT_EQ(swept[i].name, from_configs[i].name);
    EXPECT_EQ(swept[i].n_out, from_configs[i].n_out) << swept[i].model << " " << swept[i].name;
    EXPECT_EQ(swept[i].k, from_configs[i].k) << swept[i].model << " " << swept[i].name;
  }
}

TEST(ProjectionShapes, QuickSweepKeeps1B8BAnd70B) {
  auto quick = probe::default_projections(true);
  ASSERT_EQ(quick.size(), 12u);
  EXPECT_EQ(quick[0].model, "llama-3.2-1b");
  EXPECT_EQ(quick[4].model, "llama-3-8b");
  EXPECT_EQ(quick[8].model, "llama-3-70b");
  // Llama 3 8B: QKV 4096 + 2 x 1024 outputs over 4096; down 4096 over 14336.
  EXPECT_EQ(quick[4].n_out, 6144);
  EXPECT_EQ(quick[4].k, 4096);
  EXPECT_EQ(quick[7].n_out, 4096);
  EXPECT_EQ(quick[7].k, 14336);
}

}  // namespace
}  // namespace inferlab
