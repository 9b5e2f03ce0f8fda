#pragma once
#include <cstdint>
#include <vector>

#include "engine/backend.hpp"

namespace inferlab::engine {

struct BenchOptions {
  int64_t batch = 1;
  int64_t input_tokens = 512;
  int64_t output_tokens = 128;
  int64_t warmup = 1;           // untimed prefills (and a few decode steps) first
  int64_t repeats = 5;          // timed prefills
  uint64_t seed = 0;            // the random prompt tokens
  bool profile_kernels = true;  // one more prefill and decode step with per-kernel events
};

// Median and spread of repeated timings, in seconds.
struct TimingStats {
  double median_s = 0, mean_s = 0, min_s = 0, max_s = 0, p10_s = 0, p90_s = 0;
  int64_t samples = 0;
};
TimingStats timing_stats(std::vector<double> samples_s);

struct BenchResult {
  // Device time (CUDA events) where the backend measures it, else host wall time.
  bool device_timed = false;
  TimingStats prefill;      // the whole batch's prefill, greedy first token included
  TimingStats decode_step;  // every decode step of the run (batch tokens each)
  TimingStats prefill_wall, decode_step_wall;  // host wall time around forward_sample
  double ttft_s = 0;                // the median prefill (the first token comes out of it)
  double tpot_s = 0;                // mean decode step (what predict's tpot is)
  double e2e_s = 0;                 // ttft + (output - 1) tpot
  double decode_tokens_per_s = 0;   // batch / tpot
  double prefill_tokens_per_s = 0;  // batch × input / prefill
  int64_t kv_cache_tokens = 0;      // the backend's pool
  int64_t kv_bytes_per_token = 0;   // bf16 keys and values, all layers
  std::vector<KernelClassTime> prefill_kernels, decode_kernels;  // profiled passes
  RoutingStats prefill_routing, decode_routing;  // their routing (mixtures of experts)
};

// Prefills `batch` random prompts of input_tokens together, `repeats` times, then decodes
// output_tokens − 1 steps of the whole batch (greedy, each sequence fed its own token), timing
// every pass. Throws InputError when the cache cannot hold batch × (input + output) tokens or
// the lengths pass the model's context.
BenchResult run_engine_bench(Backend& backend, const BenchOptions& options);

}  // namespace inferlab::engine
