#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "model/model_config.hpp"
#include "serve/serving_loop.hpp"
#include "serve/workload.hpp"

namespace inferlab::cli {

// Flags shared by `serve` and `capacity`: the workload and the engine's limits and features.
struct ServeArgs {
  std::string trace;
  double rate = 1.0;
  int64_t requests = 1000;
  std::string input_dist = "lognormal:1024,0.6", output_dist = "lognormal:256,0.6";
  std::string arrival = "poisson", shared_prefix;
  uint64_t seed = 1;
  std::string policy = "chunked", preemption = "recompute";
  int64_t max_num_seqs = 256, max_num_batched_tokens = 0, block_size = 16;
  bool prefix_caching = false;
  int64_t max_model_len = 0;  // 0: the model's context
  std::string speculative;    // draft=MODEL,k=4,accept=0.7
};

// `with_rate`: serve takes --rate; capacity searches it.
void add_serve_options(CLI::App* app, ServeArgs& args, bool with_rate);
// The workload's flags alone (--trace, --rate, --requests, the distributions, --arrival,
// --shared-prefix, --seed): `loadgen`, which drives a server it does not configure.
void add_workload_options(CLI::App* app, ServeArgs& args, bool with_rate);

// The workload: the trace, or requests drawn from the distributions at `rate`.
std::vector<ServeRequest> make_workload(const ServeArgs& args, double rate);

// Engine limits and features; the KV cache size is filled in by the caller. max_model_len is
// --max-model-len, else the model's context (`model_context`, 0 when unknown: no limit).
SchedulerConfig make_scheduler_config(const ServeArgs& args, int64_t model_context);
// "recompute" or "swap"; InputError otherwise.
PreemptionMode parse_preemption(const std::string& name);

struct SpeculativeArgs {
  std::string draft_model;
  int k = 0;
  double acceptance = 0.0;
  double proposed_mean = 0.0;  // 0: k
};
// --speculative in the one grammar (serve/speculative_spec.hpp); empty text: off. The simulator
// takes accept=P (default 0) and propose=L (default k); the engine executor measures its own
// and ignores them.
SpeculativeArgs parse_speculative(const std::string& text);
// The draft model --speculative names; null without speculation.
std::unique_ptr<ModelConfig> load_draft_model(const ServeArgs& args);

}  // namespace inferlab::cli
