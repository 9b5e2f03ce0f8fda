#include <gtest/gtest.h>

#include "predict/step_predictor.hpp"
#include "predict/sustained_clock.hpp"
#include "util/error.hpp"

namespace inferlab {
namespace {

nlohmann::json run(const char* label, double mhz, nlohmann::json result = nullptr) {
  nlohmann::json r = {{"label", label}, {"sm_mhz_median", mhz}};
  if (!result.is_null()) r["result"] = result;
  return r;
}
nlohmann::json gemm(double seconds) {
  return {{"m", 2048}, {"n", 14336}, {"k", 4096}, {"median_s", seconds}};
}

TEST(SustainedClock, RatioOfTheFirstUnthrottledShape) {
  nlohmann::json big = {{"m", 8192}, {"n", 8192}, {"k", 8192}, {"median_s", 1e-3}};
  nlohmann::json doc = {
      {"runs",
       {run("idle", 1980.0),
        // Throttled already when alone (1600 < 0.98 x 1980): skipped.
        run("gemm_alone", 1600.0, big), run("gemm_back_to_back", 1400.0, big),
        run("gemm_alone", 1980.0, gemm(300e-6)), run("gemm_back_to_back", 1425.0, gemm(345e-6))}}};
  SustainedSlowdown s = sustained_slowdown_from(doc, "test");
  EXPECT_DOUBLE_EQ(s.slowdown, 345.0 / 300.0);
  EXPECT_EQ(s.shape, "2048 x 14336 x 4096");
  EXPECT_DOUBLE_EQ(s.sustained_mhz, 1425.0);
}

TEST(SustainedClock, BadFilesAreInputErrors) {
  EXPECT_THROW(sustained_slowdown_from(nlohmann::json::object(), "t"), InputError);
  nlohmann::json no_idle = {{"runs", nlohmann::json::array()}};
  EXPECT_THROW(sustained_slowdown_from(no_idle, "t"), InputError);
  nlohmann::json all_throttled = {{"runs",
                                   {run("idle", 1980.0), run("gemm_alone", 1500.0, gemm(3e-4)),
                                    run("gemm_back_to_back", 1400.0, gemm(4e-4))}}};
  EXPECT_THROW(sustained_slowdown_from(all_throttled, "t"), InputError);
  nlohmann::json negative = {{"runs",
                              {run("idle", 1980.0), run("gemm_alone", 1980.0, gemm(-1.0)),
                               run("gemm_back_to_back", 1400.0, gemm(4e-4))}}};
  EXPECT_THROW(sustained_slowdown_from(negative, "t"), InputError);
}

TEST(SustainedClock, StepScalesComputeBoundTimeByItsShare) {
  // 3 ms compute bound + 1 ms memory bound: share 0.75, slowdown 1.2 -> factor 1.15.
  StepPrediction step;
  PricedOp gemm_op;
  gemm_op.op.count = 1;
  gemm_op.cost.compute_s = 3e-3;
  gemm_op.cost.combine_parts();
  PricedOp norm_op;
  norm_op.op.count = 1;
  norm_op.cost.memory_s = 1e-3;
  norm_op.cost.combine_parts();
  step.ops = {gemm_op, norm_op};
  step.gpu_s = 4e-3;
  apply_sustained_slowdown(1.2, step);
  EXPECT_NEAR(step.ops[0].cost.time_s, 3e-3 * 1.15, 1e-15);
  EXPECT_DOUBLE_EQ(step.ops[1].cost.time_s, 1e-3);
  EXPECT_NEAR(step.gpu_s, 3e-3 * 1.15 + 1e-3, 1e-15);
  apply_sustained_slowdown(1.0, step);  // no slowdown: unchanged
  EXPECT_NEAR(step.gpu_s, 3e-3 * 1.15 + 1e-3, 1e-15);
}

}  // namespace
}  // namespace inferlab
