#include "server/serving_metrics.hpp"

#include <gtest/gtest.h>

namespace inferlab::server {
namespace {

TEST(ServingMetrics, HistogramIsCumulativeWithSumAndCount) {
  Histogram h({0.1, 1.0});
  for (double v : {0.05, 0.1, 0.5, 3.0}) h.observe(v);
  // le=0.1 holds 0.05 and 0.1 (bounds are inclusive), le=1 adds 0.5, +Inf adds 3.
  EXPECT_EQ(h.text("t", "m=\"x\""),
            "t_bucket{m=\"x\",le=\"0.1\"} 2\n"
            "t_bucket{m=\"x\",le=\"1\"} 3\n"
            "t_bucket{m=\"x\",le=\"+Inf\"} 4\n"
            "t_sum{m=\"x\"} 3.65\n"
            "t_count{m=\"x\"} 4\n");
}

TEST(ServingMetrics, PrometheusTextHasGaugesCountersAndHistograms) {
  ServingMetrics m;
  m.set_gauges({3, 2, 10, 40, 32, 128, 1, 7, 12, 5});
  m.record_finish("stop", 100, 20, 0.25, 0.02, 0.63);
  m.record_finish("abort", 50, 0, -1, 0, 0.1);
  m.record_refused(429);
  const std::string text = m.prometheus_text("llama");
  for (const char* line :
       {"inferlab:num_requests_running{model_name=\"llama\"} 3\n",
        "inferlab:num_requests_waiting{model_name=\"llama\"} 2\n",
        "inferlab:kv_cache_usage_perc{model_name=\"llama\"} 0.25\n",
        "inferlab:prefix_cache_hit_rate{model_name=\"llama\"} 0.25\n",
        "inferlab:num_preemptions_total{model_name=\"llama\"} 1\n",
        "inferlab:spec_decode_num_draft_tokens_total{model_name=\"llama\"} 12\n",
        "inferlab:spec_decode_num_accepted_tokens_total{model_name=\"llama\"} 5\n",
        "inferlab:prompt_tokens_total{model_name=\"llama\"} 150\n",
        "inferlab:generation_tokens_total{model_name=\"llama\"} 20\n",
        "finished_reason=\"stop\"} 1\n", "finished_reason=\"abort\"} 1\n", "status=\"4xx\"} 1\n",
        "inferlab:time_to_first_token_seconds_count{model_name=\"llama\"} 1\n",
        "inferlab:time_to_first_token_seconds_bucket{model_name=\"llama\",le=\"0.25\"} 1\n",
        "inferlab:time_per_output_token_seconds_sum{model_name=\"llama\"} 0.02\n",
        "# TYPE inferlab:e2e_request_latency_seconds histogram\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace inferlab::server
