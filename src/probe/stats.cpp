#include "probe/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace inferlab {

SampleStats summarize(std::vector<double> samples) {
  if (samples.empty()) throw std::invalid_argument("summarize: no samples");
  std::sort(samples.begin(), samples.end());
  SampleStats s;
  const size_t n = samples.size();
  s.samples = static_cast<int>(n);
  s.min = samples.front();
  s.max = samples.back();
  s.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(n);
  double squares = 0.0;
  for (double x : samples) squares += (x - s.mean) * (x - s.mean);
  s.stdev = std::sqrt(squares / static_cast<double>(n));
  return s;
}

nlohmann::json stats_to_json(const SampleStats& s) {
  return {{"median_s", s.median}, {"min_s", s.min},     {"max_s", s.max},
          {"mean_s", s.mean},     {"stdev_s", s.stdev}, {"samples", s.samples}};
}

SampleStats rate_stats(const SampleStats& t, double work) {
  SampleStats r;
  r.samples = t.samples;
  r.median = work / t.median;
  r.min = work / t.max;
  r.max = work / t.min;
  r.mean = work / t.mean;
  // First-order propagation: d(w/t) = w/t^2 dt.
  r.stdev = work / (t.mean * t.mean) * t.stdev;
  return r;
}

}  // namespace inferlab
