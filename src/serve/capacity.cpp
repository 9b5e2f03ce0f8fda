#include "serve/capacity.hpp"

namespace inferlab {

RateSearch find_max_rate(const std::vector<ServeRequest>& unit_rate_requests,
                         const SchedulerConfig& engine, const IterationCost& cost,
                         const CapacitySlo& slo, double tolerance) {
  RateSearch search;
  std::vector<ServeRequest> scaled = unit_rate_requests;
  auto run_at = [&](double rate, ServeSummary& summary) {
    for (size_t i = 0; i < scaled.size(); ++i) {
      scaled[i].arrival_s = unit_rate_requests[i].arrival_s / rate;
    }
    ++search.simulations;
    summary = summarize(simulate_serving(scaled, engine, cost));
    return summary.rejected == 0 && summary.ttft.p99_s <= slo.ttft_p99_s &&
           summary.tpot.p99_s <= slo.tpot_p99_s;
  };
  constexpr double kMaxRate = 1e5;
  ServeSummary summary;
  double lo = 0.0, hi = 1.0;
  // Grow or shrink the bracket by powers of two until it holds the boundary.
  if (run_at(hi, summary)) {
    search.at_max = summary;
    lo = hi;
    while (hi < kMaxRate) {
      hi *= 2.0;
      if (!run_at(hi, summary)) break;
      search.at_max = summary;
      lo = hi;
    }
    if (lo >= kMaxRate) {
      search.max_rate_per_s = lo;
      return search;
    }
  } else {
    while (hi > 1e-4) {
      hi *= 0.5;
      if (run_at(hi, summary)) {
        search.at_max = summary;
        lo = hi;
        hi *= 2.0;
        break;
      }
    }
    if (lo == 0.0) return search;  // misses the SLO even with requests far apart
  }
  while ((hi - lo) > tolerance * lo) {
    const double mid = 0.5 * (lo + hi);
    if (run_at(mid, summary)) {
      lo = mid;
      search.at_max = summary;
    } else {
      hi = mid;
    }
  }
  search.max_rate_per_s = lo;
  return search;
}

}  // namespace inferlab
