#include "probe/stats.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace inferlab {
namespace {

TEST(ProbeStats, OddAndEvenCounts) {
  SampleStats s = summarize({3.0, 1.0, 2.0});
  EXPECT_DOUBLE_EQ(s.median, 2.0);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 3.0);
  EXPECT_DOUBLE_EQ(s.mean, 2.0);
  EXPECT_DOUBLE_EQ(s.stdev, std::sqrt(2.0 / 3.0));  // population stdev of 1, 2, 3
  EXPECT_EQ(s.samples, 3);
  EXPECT_DOUBLE_EQ(summarize({4.0, 1.0, 2.0, 3.0}).median, 2.5);
  EXPECT_THROW(summarize({}), std::invalid_argument);
}

TEST(ProbeStats, RatesInvertTimes) {
  SampleStats t = summarize({1.0, 2.0, 4.0});
  SampleStats r = rate_stats(t, 8.0);
  EXPECT_DOUBLE_EQ(r.median, 4.0);  // 8 / 2
  EXPECT_DOUBLE_EQ(r.max, 8.0);     // fastest run
  EXPECT_DOUBLE_EQ(r.min, 2.0);     // slowest run
}

TEST(ProbeStats, JsonFields) {
  auto j = stats_to_json(summarize({1.0, 2.0}));
  for (const char* key : {"median_s", "min_s", "max_s", "mean_s", "stdev_s", "samples"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
}

}  // namespace
}  // namespace inferlab
