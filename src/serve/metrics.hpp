#pragma once
#include <cstdint>
#include <limits>
#include <vector>

#include "serve/serving_loop.hpp"

namespace inferlab {

struct LatencyStats {
  int64_t count = 0;
  double mean_s = 0.0, p50_s = 0.0, p90_s = 0.0, p99_s = 0.0, max_s = 0.0;
};
// Percentiles by linear interpolation between order statistics (numpy's default).
double percentile(std::vector<double> values, double q);
LatencyStats latency_stats(const std::vector<double>& values);

// Per-request targets for goodput: a request counts when both hold.
struct SloTargets {
  double ttft_s = std::numeric_limits<double>::infinity();
  double tpot_s = std::numeric_limits<double>::infinity();
};

struct ServeSummary {
  int64_t requests = 0, completed = 0, rejected = 0;
  int64_t rejected_past_max_model_len = 0;  // of the rejected: prompt + output > max_model_len
  LatencyStats ttft, tpot, itl, e2e;
  double duration_s = 0.0;  // first arrival to last finish
  double requests_per_s = 0.0, output_tokens_per_s = 0.0, total_tokens_per_s = 0.0;
  double goodput_requests_per_s = 0.0, slo_attainment = 0.0;
  int64_t preemptions = 0;
  double prefix_hit_rate = 0.0;  // prompt tokens served from the prefix cache
  double draft_acceptance = 0.0;
  double mean_batch_seqs = 0.0, mean_kv_use = 0.0, max_kv_use = 0.0;  // time-weighted
  int64_t iterations = 0;
};
ServeSummary summarize(const ServeResult& result, const SloTargets& slo = {});

}  // namespace inferlab
