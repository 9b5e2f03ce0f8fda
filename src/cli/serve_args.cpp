#include "cli/serve_args.hpp"

#include <cmath>

#include "cli/common_args.hpp"
#include "cli/engine_args.hpp"
#include "cli/workload_grammar.hpp"
#include "serve/speculative_spec.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace inferlab::cli {

void add_workload_options(CLI::App* app, ServeArgs& a, bool with_rate) {
  app->add_option("--trace", a.trace,
                  "Request trace: JSONL or CSV with arrival_s, prompt_tokens, output_tokens "
                  "[, prefix_id, prefix_tokens]");
  if (with_rate) {
    app->add_option("--rate", a.rate, "Arrival rate, requests/s (0: all at time 0)")
        ->capture_default_str();
  }
  app->add_option("--requests", a.requests, "Requests to draw")->capture_default_str();
  app->add_option("--input-dist", a.input_dist,
                  "Prompt tokens: fixed:N, uniform:LO,HI, normal:MEAN,SD, lognormal:MEAN,SIGMA, "
                  "empirical:V1,V2,... or empirical:@FILE")
      ->capture_default_str();
  app->add_option("--output-dist", a.output_dist, "Output tokens, same forms as --input-dist")
      ->capture_default_str();
  app->add_option("--arrival", a.arrival, "poisson, gamma:CV or bursty:PERIOD_S,DUTY")
      ->capture_default_str();
  app->add_option("--shared-prefix", a.shared_prefix,
                  "Shared system prompt: tokens=N,groups=G[,share=F]");
  app->add_option("--seed", a.seed, "Seed of the workload and of speculative acceptance draws")
      ->capture_default_str();
}

void add_serve_options(CLI::App* app, ServeArgs& a, bool with_rate) {
  add_workload_options(app, a, with_rate);
  app->add_option("--policy", a.policy, "vllm, chunked, orca or static")->capture_default_str();
  app->add_option("--preemption", a.preemption, "recompute or swap")->capture_default_str();
  app->add_option("--max-num-seqs", a.max_num_seqs, "Sequences per iteration at most")
      ->capture_default_str();
  app->add_option("--max-num-batched-tokens", a.max_num_batched_tokens,
                  "Token budget per iteration (default: 2048 for chunked, 8192 otherwise)");
  app->add_option("--block-size", a.block_size, "KV block size, tokens")->capture_default_str();
  app->add_flag("--prefix-caching", a.prefix_caching, "Share full KV blocks of common prefixes");
  app->add_option("--max-model-len", a.max_model_len,
                  "Longest prompt + output a request may ask for; longer ones are rejected "
                  "(default: the model's context)");
  app->add_option(
      "--speculative", a.speculative,
      "Speculative decoding: draft=MODEL,k=K,accept=P[,propose=L] (draft=ngram: prompt lookup, no "
      "draft model; propose=L: the simulator's mean proposals a step, <= k; --executor engine "
      "runs the draft model or the lookup and measures the acceptance)");
}

std::vector<ServeRequest> make_workload(const ServeArgs& a, double rate) {
  if (!a.trace.empty()) return load_trace(a.trace);
  WorkloadSpec spec;
  spec.requests = a.requests;
  spec.rate_per_s = rate;
  spec.arrival = parse_arrival_process(a.arrival);
  spec.input = parse_length_distribution(a.input_dist, "input");
  spec.output = parse_length_distribution(a.output_dist, "output");
  if (!a.shared_prefix.empty()) spec.prefix = parse_shared_prefix(a.shared_prefix);
  spec.seed = a.seed;
  return generate_workload(spec);
}

PreemptionMode parse_preemption(const std::string& name) {
  if (name == "recompute") return PreemptionMode::recompute;
  if (name == "swap") return PreemptionMode::swap;
  throw InputError("--preemption takes recompute or swap, got '" + name + "'");
}

SchedulerConfig make_scheduler_config(const ServeArgs& a, int64_t model_context) {
  SchedulerConfig c;
  c.max_model_len = resolve_max_model_len(a.max_model_len, model_context);
  c.policy = parse_schedule_policy(a.policy);
  c.preemption = parse_preemption(a.preemption);
  if (a.max_num_seqs < 1 || a.max_num_seqs > 65536) {
    throw InputError("--max-num-seqs must be in [1, 65536]");
  }
  if (a.block_size < 1 || a.block_size > 4096)
    throw InputError("--block-size must be in [1, 4096]");
  if (a.max_num_batched_tokens < 0 || a.max_num_batched_tokens > (int64_t{1} << 20)) {
    throw InputError("--max-num-batched-tokens must be in [1, 2^20]");
  }
  c.max_num_seqs = a.max_num_seqs;
  c.block_size = a.block_size;
  c.max_num_batched_tokens = a.max_num_batched_tokens > 0          ? a.max_num_batched_tokens
                             : c.policy == SchedulePolicy::chunked ? 2048
                                                                   : 8192;
  c.prefix_caching = a.prefix_caching;
  const SpeculativeArgs spec = parse_speculative(a.speculative);
  c.speculative.k = spec.k;
  c.speculative.acceptance = spec.acceptance;
  c.speculative.proposed_mean = spec.proposed_mean;
  c.seed = a.seed;
  return c;
}

SpeculativeArgs parse_speculative(const std::string& text) {
  const SpeculativeSpec spec = parse_speculative_spec(text);
  return {spec.draft, spec.k, spec.acceptance.value_or(0.0), spec.proposed_mean.value_or(0.0)};
}

std::unique_ptr<ModelConfig> load_draft_model(const ServeArgs& args) {
  const SpeculativeArgs spec = parse_speculative(args.speculative);
  // draft=ngram: prompt lookup on the host, no draft model to price.
  if (spec.draft_model.empty() || spec.draft_model == "ngram") return nullptr;
  // A checkpoint folder is priced by its config.json, as the target is.
  const bool folder = is_checkpoint_folder(spec.draft_model);
  return std::make_unique<ModelConfig>(
      load_model(folder ? spec.draft_model + "/config.json" : spec.draft_model));
}

}  // namespace inferlab::cli
