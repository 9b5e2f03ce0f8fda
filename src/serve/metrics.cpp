#include "serve/metrics.hpp"

#include <algorithm>
#include <cmath>

namespace inferlab {

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double rank = q / 100.0 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (rank - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

LatencyStats latency_stats(const std::vector<double>& values) {
  LatencyStats s;
  s.count = static_cast<int64_t>(values.size());
  if (values.empty()) return s;
  double sum = 0.0;
  for (double v : values) sum += v;
  s.mean_s = sum / static_cast<double>(values.size());
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  s.p50_s = percentile(sorted, 50);
  s.p90_s = percentile(sorted, 90);
  s.p99_s = percentile(sorted, 99);
  s.max_s = sorted.back();
  return s;
}

ServeSummary summarize(const ServeResult& result, const SloTargets& slo) {
  ServeSummary s;
  s.requests = static_cast<int64_t>(result.requests.size());
  std::vector<double> ttft, tpot, itl, e2e;
  int64_t output_tokens = 0, prompt_tokens = 0, good = 0;
  for (const auto& r : result.requests) {
    if (r.rejected) {
      ++s.rejected;
      if (r.past_max_model_len) ++s.rejected_past_max_model_len;
      continue;
    }
    ++s.completed;
    ttft.push_back(r.ttft_s());
    e2e.push_back(r.e2e_s());
    if (r.output_tokens > 1) tpot.push_back(r.tpot_s());
    itl.insert(itl.end(), r.inter_token_s.begin(), r.inter_token_s.end());
    output_tokens += r.output_tokens;
    prompt_tokens += r.prompt_tokens;
    if (r.ttft_s() <= slo.ttft_s && r.tpot_s() <= slo.tpot_s) ++good;
  }
  s.ttft = latency_stats(ttft);
  s.tpot = latency_stats(tpot);
  s.itl = latency_stats(itl);
  s.e2e = latency_stats(e2e);
  s.duration_s = result.makespan_s;
  if (s.duration_s > 0.0) {
    s.requests_per_s = static_cast<double>(s.completed) / s.duration_s;
    s.output_tokens_per_s = static_cast<double>(output_tokens) / s.duration_s;
    s.total_tokens_per_s = static_cast<double>(output_tokens + prompt_tokens) / s.duration_s;
    s.goodput_requests_per_s = static_cast<double>(good) / s.duration_s;
  }
  s.slo_attainment =
      s.requests > 0 ? static_cast<double>(good) / static_cast<double>(s.requests) : 0.0;
  s.preemptions = result.preemptions;
  s.prefix_hit_rate = result.prompt_tokens > 0 ? static_cast<double>(result.prefix_hit_tokens) /
                                                     static_cast<double>(result.prompt_tokens)
                                               : 0.0;
  s.draft_acceptance = result.draft_tokens_proposed > 0
                           ? static_cast<double>(result.draft_tokens_accepted) /
                                 static_cast<double>(result.draft_tokens_proposed)
                           : 0.0;
  double busy = 0.0, batch_time = 0.0, kv_time = 0.0;
  for (const auto& it : result.iterations) {
    busy += it.duration_s;
    batch_time += it.duration_s * static_cast<double>(it.batch_seqs);
    const double use = result.kv_blocks > 0 ? static_cast<double>(it.kv_blocks_used) /
                                                  static_cast<double>(result.kv_blocks)
                                            : 0.0;
    kv_time += it.duration_s * use;
    s.max_kv_use = std::max(s.max_kv_use, use);
  }
  if (busy > 0.0) {
    s.mean_batch_seqs = batch_time / busy;
    s.mean_kv_use = kv_time / busy;
  }
  s.iterations = static_cast<int64_t>(result.iterations.size());
  return s;
}

}  // namespace inferlab
