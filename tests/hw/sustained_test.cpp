#include <gtest/gtest.h>

#include "hw/sustained_clock.hpp"
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
  EXPECT_FALSE(s.lower_bound);
}

// Every alone run throttled (the H200 of 2026-11-23): the pair whose alone run kept the highest
// clock, its ratio marked as a lower bound.
TEST(SustainedClock, AllThrottledGivesALowerBound) {
  nlohmann::json big = {{"m", 8192}, {"n", 8192}, {"k", 8192}, {"median_s", 1e-3}};
  nlohmann::json doc = {
      {"runs",
       {run("idle", 1980.0), run("gemm_alone", 1590.0, big), run("gemm_back_to_back", 1500.0, big),
        run("gemm_alone", 1830.0, gemm(3e-4)), run("gemm_back_to_back", 1515.0, gemm(3.6e-4))}}};
  SustainedSlowdown s = sustained_slowdown_from(doc, "test");
  EXPECT_TRUE(s.lower_bound);
  EXPECT_DOUBLE_EQ(s.slowdown, 3.6 / 3.0);
  EXPECT_DOUBLE_EQ(s.alone_mhz, 1830.0);
}

TEST(SustainedClock, BadFilesAreInputErrors) {
  EXPECT_THROW(sustained_slowdown_from(nlohmann::json::object(), "t"), InputError);
  nlohmann::json no_idle = {{"runs", nlohmann::json::array()}};
  EXPECT_THROW(sustained_slowdown_from(no_idle, "t"), InputError);
  nlohmann::json no_pair = {{"runs", {run("idle", 1980.0), run("gemm_alone", 1500.0, gemm(3e-4))}}};
  EXPECT_THROW(sustained_slowdown_from(no_pair, "t"), InputError);
  nlohmann::json negative = {{"runs",
                              {run("idle", 1980.0), run("gemm_alone", 1980.0, gemm(-1.0)),
                               run("gemm_back_to_back", 1400.0, gemm(4e-4))}}};
  EXPECT_THROW(sustained_slowdown_from(negative, "t"), InputError);
  // Not a clock drop: past the calibrated model's bound of 3.
  nlohmann::json slower = {{"runs",
                            {run("idle", 1980.0), run("gemm_alone", 1980.0, gemm(1e-4)),
                             run("gemm_back_to_back", 900.0, gemm(4e-4))}}};
  EXPECT_THROW(sustained_slowdown_from(slower, "t"), InputError);
  nlohmann::json labelled = {{"runs", {run("idle", 1980.0), {{"label", 7}}}}};
  EXPECT_THROW(sustained_slowdown_from(labelled, "t"), InputError);
  nlohmann::json not_objects = {{"runs", {run("idle", 1980.0), 3}}};
  EXPECT_THROW(sustained_slowdown_from(not_objects, "t"), InputError);
}

// The shipped measurements (data/sustained/) are found by hardware name and read as the
// validation files they copy; GPUs without one have none.
TEST(SustainedClock, ShippedMeasurementsByHardwareName) {
  const auto h200 = shipped_sustained_path("h200");
  ASSERT_TRUE(h200.has_value());
  const SustainedMeasurement m = read_sustained_measurement(*h200, shipped_sustained_label("h200"));
  EXPECT_DOUBLE_EQ(m.slowdown, 0.00037116737365722657 / 0.0003131999969482422);
  EXPECT_NE(m.note.find("a lower bound"), std::string::npos);
  EXPECT_NE(m.note.find("from data/sustained/h200.json (2026-11-23T15:01:27Z)"), std::string::npos);
  const auto h100 = shipped_sustained_path("h100-sxm");
  ASSERT_TRUE(h100.has_value());
  EXPECT_DOUBLE_EQ(read_sustained_measurement(*h100).slowdown,
                   0.00034695838928222654 / 0.0003050239980220795);
  EXPECT_FALSE(shipped_sustained_path("a100-80g").has_value());
  EXPECT_THROW(read_sustained_measurement("/nonexistent/sustained.json"), InputError);
}

}  // namespace
}  // namespace inferlab
