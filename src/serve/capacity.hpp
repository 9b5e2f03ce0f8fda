#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "serve/iteration_cost.hpp"
#include "serve/metrics.hpp"
#include "serve/serving_loop.hpp"

namespace inferlab {

// Latency targets a configuration must meet at a request rate: p99 TTFT and p99 TPOT over the
// workload, with no request turned away.
struct CapacitySlo {
  double ttft_p99_s = 0.0;
  double tpot_p99_s = 0.0;
};

struct RateSearch {
  double max_rate_per_s = 0.0;  // highest rate found within the SLO (0: not even a trickle)
  ServeSummary at_max;          // the run at that rate
  int simulations = 0;
};

// Highest arrival rate at which the engine meets the SLO. `unit_rate_requests` is the
// workload drawn at 1 request/s; a rate r replays it with arrival times divided by r, so every
// rate sees the same requests in the same order. Doubling then bisection to `tolerance`
// (relative).
RateSearch find_max_rate(const std::vector<ServeRequest>& unit_rate_requests,
                         const SchedulerConfig& engine, const IterationCost& cost,
                         const CapacitySlo& slo, double tolerance = 0.02);

// USD per million output tokens at a throughput, for `devices` devices at a price per device
// hour.
inline double cost_per_million_tokens(double usd_per_device_hour, int devices,
                                      double output_tokens_per_s) {
  if (!(output_tokens_per_s > 0.0)) return std::nan("");
  return usd_per_device_hour * devices / 3600.0 / output_tokens_per_s * 1e6;
}

}  // namespace inferlab
