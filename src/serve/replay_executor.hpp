#pragma once
// Replays a measured serving run: the scheduler forms the same iterations again when each takes
// the time it took (same requests, same limits, same clock), so every measured iteration can be
// priced again under another cost model (PricedExecutor around this one), without a GPU.
#include <string>
#include <vector>

#include "serve/executor.hpp"
#include "serve/serving_loop.hpp"

namespace inferlab {

// One measured iteration, as `serve --iterations-csv` writes it.
struct MeasuredIteration {
  double duration_s = 0.0, device_s = 0.0;
  int64_t prefill_tokens = 0, decode_seqs = 0;
};

// The rows of an iterations CSV (duration_ms, device_ms, prefill_tokens, decode_seqs by their
// header names); InputError for a missing file, column or malformed number.
std::vector<MeasuredIteration> load_measured_iterations(const std::string& path);

// Gives each iteration the measured one's duration, in order, and advances every sequence as an
// engine without speculation does (a prefill chunk its tokens, a decode one). An iteration whose
// prefill tokens or decoding sequences differ from the measured one's, or one past the last, is
// an InputError: the replay has left the measured run (other flags or another workload).
class ReplayExecutor : public Executor {
 public:
  ReplayExecutor(std::vector<MeasuredIteration> measured, const SchedulerConfig& config);
  IterationOutcome execute(const ScheduledIteration& iteration) override;
  // Measured iterations not replayed yet (0 at the end of a faithful replay).
  size_t remaining() const { return measured_.size() - next_; }

 private:
  std::vector<MeasuredIteration> measured_;
  size_t next_ = 0;
};

}  // namespace inferlab
