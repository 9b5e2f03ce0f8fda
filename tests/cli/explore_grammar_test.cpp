// The text forms of a design space (--vary, --workload of `explore`).
#include "cli/explore_grammar.hpp"

#include <gtest/gtest.h>

#include <string>

#include "util/error.hpp"
#include "util/field_error.hpp"

namespace inferlab::cli {
namespace {

TEST(ExploreGrammar, ParsesAxesInTheIssuesForm) {
  auto axes = parse_design_axes("cores=66,132,memory=HBM3,DDR5");
  ASSERT_EQ(axes.size(), 2u);
  EXPECT_EQ(axes[0].key, "cores");
  EXPECT_EQ(axes[0].values, (std::vector<std::string>{"66", "132"}));
  EXPECT_EQ(axes[1].key, "memory");
  EXPECT_EQ(axes[1].values, (std::vector<std::string>{"HBM3", "DDR5"}));
  EXPECT_THROW(parse_design_axes("66,132"), InputError);
  EXPECT_THROW(parse_design_axes("cores="), InputError);
  EXPECT_THROW(parse_design_axes("cores=1,cores=2"), InputError);
  EXPECT_THROW(parse_design_axes(""), InputError);
}

TEST(ExploreGrammar, ParsesWorkloads) {
  auto w = parse_design_workload("decode:context=4096,batch=max,max_batch=64");
  EXPECT_EQ(w.phase, Phase::decode);
  EXPECT_EQ(w.context, 4096);
  EXPECT_EQ(w.batch, 0);
  EXPECT_EQ(w.max_batch, 64);
  auto p = parse_design_workload("prefill:tokens=512");
  EXPECT_EQ(p.phase, Phase::prefill);
  EXPECT_EQ(p.batch, 1);
  EXPECT_THROW(parse_design_workload("train"), InputError);
  EXPECT_THROW(parse_design_workload("decode:context=-1"), InputError);
  EXPECT_THROW(parse_design_workload("decode:speed=3"), InputError);
}

TEST(ExploreGrammar, ErrorsNameTheFieldNotAFlag) {
  try {
    parse_design_workload("train");
    ADD_FAILURE() << "no error";
  } catch (const FieldError& e) {
    EXPECT_EQ(std::string(e.what()), "`workload` must start with prefill or decode, got 'train'");
  }
  try {
    parse_design_axes("66");
    ADD_FAILURE() << "no error";
  } catch (const FieldError& e) {
    EXPECT_EQ(std::string(e.what()), "`axes`: '66' comes before any key=");
  }
}

}  // namespace
}  // namespace inferlab::cli
