#include "fit/validation.hpp"

#include <gtest/gtest.h>

#include "cost/roofline.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

namespace inferlab {
namespace {

// A reference file with one large add (memory bound) and the fastest op (the floor).
nlohmann::json two_ops(double add_measured_s) {
  return {{"ops",
           {{{"op", "add"}, {"tokens", 1}, {"hidden", 8}, {"median_s", 4e-6}},
            {{"op", "add"}, {"tokens", 32768}, {"hidden", 4096}, {"median_s", add_measured_s}}}}};
}

TEST(Validation, OperatorErrorsAgainstTheIsolatedFloor) {
  HardwareSpec hw = load_hardware("h100-sxm", kProfileNone);
  RooflineCostModel cost(hw, testing::unit_factors(1e-6));
  // 805,306,368 bytes at 3.35 TB/s = 240.39 us in-stream work; isolated: + 4 us floor.
  double work_s = 805'306'368.0 / 3.35e12;
  ValidationReport r =
      validate_against_reference(two_ops(work_s + 4e-6), "t", cost, 1e-6, load_host_overhead());
  EXPECT_DOUBLE_EQ(r.isolated_op_floor_s, 4e-6);
  ASSERT_EQ(r.cases.size(), 2u);
  EXPECT_NEAR(r.cases[1].predicted_s, work_s + 4e-6, 1e-12);
  EXPECT_NEAR(r.cases[1].error(), 0.0, 1e-9);
  EXPECT_EQ(r.groups.at("elementwise").cases, 2);
}

TEST(Validation, BoundsPassFailAndRejectUnknownGroups) {
  HardwareSpec hw = load_hardware("h100-sxm", kProfileNone);
  RooflineCostModel cost(hw, testing::unit_factors(1e-6));
  double work_s = 805'306'368.0 / 3.35e12;
  // Measured 10% above the prediction: error -1/11 on that case, 0 on the floor case.
  ValidationReport r = validate_against_reference(two_ops(1.1 * (work_s + 4e-6)), "t", cost, 1e-6,
                                                  load_host_overhead());
  // The floor case's own 48 bytes (14 ps over its 4 us) add an error of ~4e-6 / 2.
  EXPECT_NEAR(r.groups.at("elementwise").mape, (1.0 / 11.0) / 2.0, 1e-5);
  EXPECT_TRUE(groups_over_bounds(r, "elementwise=0.05").empty());
  EXPECT_EQ(groups_over_bounds(r, "elementwise=0.04").size(), 1u);
  EXPECT_THROW(groups_over_bounds(r, "gemm=0.1"), InputError);
  EXPECT_THROW(groups_over_bounds(r, "elementwise"), InputError);
  EXPECT_THROW(groups_over_bounds(r, "elementwise=-1"), InputError);
}

TEST(Validation, StepsUseThePytorchPlanInBothModes) {
  HardwareSpec hw = load_hardware("h100-sxm");
  RooflineCostModel cost(hw, load_delay_factors(hw));
  nlohmann::json ref = {{"steps",
                         {{{"model", "llama-3.2-1b"},
                           {"phase", "decode"},
                           {"batch", 1},
                           {"context", 512},
                           {"graph", {{"median_s", 2e-3}}},
                           {"eager", {{"median_s", 8e-3}}}}}}};
  ValidationReport r = validate_against_reference(ref, "t", cost, 1.5e-6, load_host_overhead());
  ASSERT_EQ(r.cases.size(), 2u);
  EXPECT_EQ(r.cases[0].group, "decode_graph");
  EXPECT_EQ(r.cases[1].group, "decode_eager");
  EXPECT_GT(r.cases[1].predicted_s, r.cases[0].predicted_s);  // host launch cost when eager
  EXPECT_THROW(
      validate_against_reference(nlohmann::json::object(), "t", cost, 1e-6, load_host_overhead()),
      InputError);
}

}  // namespace
}  // namespace inferlab
