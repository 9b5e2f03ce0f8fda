#include "server/serving_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace inferlab::server {

void Histogram::observe(double value) {
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  if (it != bounds_.end()) ++counts_[static_cast<size_t>(it - bounds_.begin())];
  sum_ += value;
  ++count_;
}

std::string Histogram::text(const std::string& name, const std::string& labels) const {
  std::string out;
  int64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, bounds_[i], cumulative);
  }
  out += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels, count_);
  out += fmt::format("{}_sum{{{}}} {}\n", name, labels, sum_);
  out += fmt::format("{}_count{{{}}} {}\n", name, labels, count_);
  return out;
}

// vLLM's bucket bounds (seconds) for the same histograms.
ServingMetrics::ServingMetrics()
    : ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
             10.0, 20.0, 40.0, 80.0}),
      tpot_({0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
             10.0, 20.0, 40.0, 80.0}),
      e2e_({0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
            240.0, 480.0, 960.0}) {}

void ServingMetrics::set_gauges(const LoopGauges& gauges) {
  std::lock_guard lock(mutex_);
  gauges_ = gauges;
}

LoopGauges ServingMetrics::gauges() const {
  std::lock_guard lock(mutex_);
  return gauges_;
}

void ServingMetrics::record_finish(const std::string& reason, int64_t prompt_tokens,
                                   int64_t completion_tokens, double ttft_s, double tpot_s,
                                   double e2e_s) {
  std::lock_guard lock(mutex_);
  prompt_tokens_ += prompt_tokens;
  generation_tokens_ += completion_tokens;
  if (reason == "stop")
    ++finished_stop_;
  else if (reason == "length")
    ++finished_length_;
  else if (reason == "abort")
    ++finished_abort_;
  else
    ++finished_error_;
  if (ttft_s >= 0) ttft_.observe(ttft_s);
  if (completion_tokens > 1) tpot_.observe(tpot_s);
  if (reason == "stop" || reason == "length") e2e_.observe(e2e_s);
}

void ServingMetrics::record_refused(int status) {
  std::lock_guard lock(mutex_);
  (status >= 500 ? refused_5xx_ : refused_4xx_) += 1;
}

std::string ServingMetrics::prometheus_text(const std::string& model_name) const {
  std::lock_guard lock(mutex_);
  const std::string labels = fmt::format("model_name=\"{}\"", model_name);
  std::string out;
  const auto metric = [&](const char* name, const char* type, const char* help, auto value,
                          const std::string& extra = "") {
    out += fmt::format("# HELP inferlab:{} {}\n# TYPE inferlab:{} {}\n", name, help, name, type);
    out += fmt::format("inferlab:{}{{{}{}}} {}\n", name, labels, extra, value);
  };
  metric("num_requests_running", "gauge", "Sequences in the running batch.", gauges_.running);
  metric("num_requests_waiting", "gauge", "Sequences waiting to be admitted.", gauges_.waiting);
  const double kv_use = gauges_.kv_blocks_total > 0
                            ? static_cast<double>(gauges_.kv_blocks_used) /
                                  static_cast<double>(gauges_.kv_blocks_total)
                            : 0.0;
  metric("kv_cache_usage_perc", "gauge", "Share of KV-cache blocks in use (1 = full).", kv_use);
  metric("kv_cache_blocks_total", "gauge", "KV-cache blocks in the pool.", gauges_.kv_blocks_total);
  const double hit_rate = gauges_.prompt_tokens_admitted > 0
                              ? static_cast<double>(gauges_.prefix_hit_tokens) /
                                    static_cast<double>(gauges_.prompt_tokens_admitted)
                              : 0.0;
  metric("prefix_cache_hit_rate", "gauge",
         "Share of admitted prompt tokens served from the prefix cache.", hit_rate);
  metric("prefix_cache_hit_tokens_total", "counter", "Prompt tokens served from the prefix cache.",
         gauges_.prefix_hit_tokens);
  metric("num_preemptions_total", "counter", "Sequences preempted (recompute).",
         gauges_.preemptions);
  metric("iterations_total", "counter", "Engine iterations (forward passes).", gauges_.iterations);
  metric("spec_decode_num_draft_tokens_total", "counter", "Draft tokens verified.",
         gauges_.draft_tokens);
  metric("spec_decode_num_accepted_tokens_total", "counter", "Draft tokens accepted.",
         gauges_.accepted_draft_tokens);
  metric("prompt_tokens_total", "counter", "Prompt tokens of finished requests.", prompt_tokens_);
  metric("generation_tokens_total", "counter", "Tokens generated for finished requests.",
         generation_tokens_);
  out +=
      "# HELP inferlab:request_success_total Finished requests by finish reason.\n"
      "# TYPE inferlab:request_success_total counter\n";
  for (const auto& [reason, count] :
       {std::pair{"stop", finished_stop_}, std::pair{"length", finished_length_},
        std::pair{"abort", finished_abort_}, std::pair{"error", finished_error_}}) {
    out += fmt::format("inferlab:request_success_total{{{},finished_reason=\"{}\"}} {}\n", labels,
                       reason, count);
  }
  out +=
      "# HELP inferlab:request_refused_total Requests refused before they ran, by status class.\n"
      "# TYPE inferlab:request_refused_total counter\n";
  out +=
      fmt::format("inferlab:request_refused_total{{{},status=\"4xx\"}} {}\n", labels, refused_4xx_);
  out +=
      fmt::format("inferlab:request_refused_total{{{},status=\"5xx\"}} {}\n", labels, refused_5xx_);
  out +=
      "# HELP inferlab:time_to_first_token_seconds Time to first token.\n"
      "# TYPE inferlab:time_to_first_token_seconds histogram\n";
  out += ttft_.text("inferlab:time_to_first_token_seconds", labels);
  out +=
      "# HELP inferlab:time_per_output_token_seconds Mean time per output token after the first, "
      "per request.\n"
      "# TYPE inferlab:time_per_output_token_seconds histogram\n";
  out += tpot_.text("inferlab:time_per_output_token_seconds", labels);
  out +=
      "# HELP inferlab:e2e_request_latency_seconds Arrival to last token.\n"
      "# TYPE inferlab:e2e_request_latency_seconds histogram\n";
  out += e2e_.text("inferlab:e2e_request_latency_seconds", labels);
  return out;
}

}  // namespace inferlab::server
