#pragma once
#include <nlohmann/json.hpp>
#include <vector>

namespace inferlab {

// Summary of repeated timings (seconds) or rates.
struct SampleStats {
  double median = 0.0, min = 0.0, max = 0.0, mean = 0.0, stdev = 0.0;
  int samples = 0;
};

// Throws std::invalid_argument on an empty list. stdev is the population standard deviation.
SampleStats summarize(std::vector<double> samples);

// {"median_s", "min_s", "max_s", "mean_s", "stdev_s", "samples"}
nlohmann::json stats_to_json(const SampleStats& stats);

// Converts time statistics to rate statistics for `work` units per run (the fastest run is the
// highest rate).
SampleStats rate_stats(const SampleStats& time_s, double work);

}  // namespace inferlab
