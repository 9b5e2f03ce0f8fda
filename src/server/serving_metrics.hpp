#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace inferlab::server {

// A Prometheus histogram: cumulative counts per upper bound, the sum and the count.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds)
      : bounds_(std::move(bounds)), counts_(bounds_.size(), 0) {}
  void observe(double value);
  // The exposition lines of `name` with `labels` ("model_name=\"x\""): _bucket per bound and
  // +Inf, _sum, _count.
  std::string text(const std::string& name, const std::string& labels) const;
  int64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;  // per bound, not cumulative
  double sum_ = 0;
  int64_t count_ = 0;
};

// What /metrics reports: the loop's gauges as of its last iteration and counters and latency
// histograms over every finished request (vLLM's names, under "inferlab:").
struct LoopGauges {
  int64_t running = 0, waiting = 0;
  int64_t kv_blocks_used = 0, kv_blocks_total = 0;
  int64_t prefix_hit_tokens = 0, prompt_tokens_admitted = 0;
  int64_t preemptions = 0, iterations = 0;
  int64_t draft_tokens = 0, accepted_draft_tokens = 0;  // speculative decoding
};

class ServingMetrics {
 public:
  ServingMetrics();
  void set_gauges(const LoopGauges& gauges);
  // A request that ended: its finish reason, token counts and latencies (seconds; ttft < 0
  // when it produced no token).
  void record_finish(const std::string& reason, int64_t prompt_tokens, int64_t completion_tokens,
                     double ttft_s, double tpot_s, double e2e_s);
  void record_refused(int status);  // a request turned away before it ran (4xx/5xx)
  LoopGauges gauges() const;
  std::string prometheus_text(const std::string& model_name) const;

 private:
  mutable std::mutex mutex_;
  LoopGauges gauges_;
  Histogram ttft_, tpot_, e2e_;
  int64_t prompt_tokens_ = 0, generation_tokens_ = 0;
  int64_t finished_stop_ = 0, finished_length_ = 0, finished_abort_ = 0, finished_error_ = 0;
  int64_t refused_4xx_ = 0, refused_5xx_ = 0;
};

}  // namespace inferlab::server
