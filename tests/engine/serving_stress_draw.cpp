// Drawing a stress case from a seed: the switches of `serve` and `server`, and a workload from
// serve's own generator (serve/workload: its length distributions, arrival processes and shared
// prefixes), bent towards the edges the engine must hold at: prompts up to the context and past
// it, outputs up to 2,000, requests that exactly fit max_model_len or the pool and ones that miss
// by one, pools too small for everything at once.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "engine/serving_stress_support.hpp"
#include "serve/workload.hpp"

namespace inferlab::engine::stress {

namespace {

class Draw {
 public:
  explicit Draw(uint64_t seed) : rng_(seed * 0x9e3779b97f4a7c15ULL + 0x5eed) {}
  bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, std::max(lo, hi))(rng_);
  }
  // Spread evenly over orders of magnitude (max-num-seqs 1 to 256, budgets 256 to 8192).
  int64_t log_uniform(int64_t lo, int64_t hi) {
    const double x = std::uniform_real_distribution<double>(std::log(static_cast<double>(lo)),
                                                            std::log(hi + 0.999))(rng_);
    return std::clamp<int64_t>(static_cast<int64_t>(std::exp(x)), lo, hi);
  }
  double real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
  template <typename T>
  const T& pick(const std::vector<T>& values) {
    return values[static_cast<size_t>(uniform(0, static_cast<int64_t>(values.size()) - 1))];
  }
  uint64_t next() { return rng_(); }

 private:
  std::mt19937_64 rng_;
};

LengthDistribution prompt_lengths(Draw& d, const StressSpace& s) {
  LengthDistribution dist;
  switch (d.uniform(0, 2)) {
    case 0:
      dist.kind = LengthDistribution::Kind::uniform;
      dist.a = 1;
      dist.b = static_cast<double>(d.log_uniform(8, s.context / 2));
      break;
    case 1:
      dist.kind = LengthDistribution::Kind::lognormal;
      dist.a = static_cast<double>(d.log_uniform(4, s.context / 4));
      dist.b = 0.9;
      break;
    default:  // the edges: one token, around a block, around the context
      dist.kind = LengthDistribution::Kind::empirical;
      dist.values = {1, 2, 15, 16, 17, 64, s.context / 2, s.context - 1, s.context};
      break;
  }
  return dist;
}

LengthDistribution output_lengths(Draw& d, const StressSpace& s) {
  LengthDistribution dist;
  const int64_t kind = d.uniform(0, 7);
  if (kind < 3) {
    dist.kind = LengthDistribution::Kind::uniform;
    dist.a = 1;
    dist.b = static_cast<double>(d.log_uniform(2, 256));
  } else if (kind < 5) {
    dist.kind = LengthDistribution::Kind::lognormal;
    dist.a = static_cast<double>(d.log_uniform(4, 300));
    dist.b = 1.0;
  } else if (kind < 6) {  // prefill only: every request's one token comes from its prompt
    dist.kind = LengthDistribution::Kind::fixed;
    dist.a = 1;
  } else {
    dist.kind = LengthDistribution::Kind::empirical;
    dist.values = {1, 2, 7, 33, 200, s.max_output};
  }
  return dist;
}

// serve's generator, then lengths moved onto the edges of the rules for some requests.
std::vector<ServeRequest> draw_lengths(Draw& d, const StressSpace& s, const SchedulerConfig& e) {
  WorkloadSpec w;
  w.requests = d.uniform(2, s.max_requests);
  w.seed = d.next();
  // On the virtual clock an iteration takes a millisecond: from every request at once to one
  // every twenty iterations.
  w.rate_per_s = d.coin(0.4) ? 0.0 : static_cast<double>(d.log_uniform(50, 20000));
  w.arrival.kind = d.pick(std::vector<ArrivalProcess::Kind>{
      ArrivalProcess::Kind::poisson, ArrivalProcess::Kind::gamma, ArrivalProcess::Kind::bursty});
  w.arrival.cv = 3.0;
  w.arrival.period_s = 0.05;
  if (d.coin(0.35)) {  // many sequences decoding at once: what fills a pool and preempts
    w.rate_per_s = d.coin(0.5) ? 0.0 : 20000.0;
    w.input.kind = w.output.kind = LengthDistribution::Kind::uniform;
    w.input.a = 1;
    w.input.b = static_cast<double>(d.log_uniform(8, 128));
    w.output.a = 8;
    w.output.b = static_cast<double>(d.log_uniform(32, 512));
  } else {
    w.input = prompt_lengths(d, s);
    w.output = output_lengths(d, s);
  }
  if (d.coin(0.5)) {  // shared system prompts, some a whole number of blocks
    w.prefix.tokens = d.coin(0.5) ? e.block_size * d.uniform(1, 8) : d.uniform(1, 200);
    w.prefix.groups = d.uniform(1, 3);
    w.prefix.share = d.real(0.5, 1.0);
  }
  std::vector<ServeRequest> requests = generate_workload(w);
  const int64_t limit = e.max_model_len;
  for (ServeRequest& r : requests) {
    r.output_tokens = std::min(r.output_tokens, s.max_output);
    r.prompt_tokens = std::min(r.prompt_tokens, s.context + 64);  // some past the context
    if (d.coin(0.04)) {  // a long generation from a short prompt
      r.output_tokens = s.max_output;
      r.prompt_tokens = d.uniform(1, 64);
    }
    if (d.coin(0.1)) {  // exactly at max_model_len, or one past it
      r.output_tokens = std::min(r.output_tokens, limit - 1);
      r.prompt_tokens = limit - r.output_tokens + (d.coin(0.5) ? 1 : 0);
    }
    r.prefix_tokens = std::min(r.prefix_tokens, r.prompt_tokens);
  }
  // Keep the case's cost bounded: requests that will run, in order, until the budget is spent.
  std::vector<ServeRequest> kept;
  int64_t tokens = 0;
  for (const ServeRequest& r : requests) {
    const bool runs = !exceeds_max_model_len(r, e);
    if (runs && !kept.empty() && tokens + r.prompt_tokens + r.output_tokens > s.token_budget) {
      continue;
    }
    if (runs) tokens += r.prompt_tokens + r.output_tokens;
    kept.push_back(r);
  }
  return kept;
}

// The pool: ample (nothing is ever preempted); under pressure (it holds the largest request but
// only a half to a sixth of them all: sequences that run side by side are preempted); or tiny
// (between the smallest request's need and a little over the largest's: some can never fit).
int64_t draw_pool(Draw& d, const StressSpace& s, const SchedulerConfig& e,
                  const std::vector<ServeRequest>& requests) {
  int64_t smallest = s.max_kv_blocks, largest = 1, total = 0;
  for (const ServeRequest& r : requests) {
    if (exceeds_max_model_len(r, e)) continue;
    const int64_t need = (r.prompt_tokens + r.output_tokens - 1 + e.block_size - 1) / e.block_size;
    smallest = std::min(smallest, need);
    largest = std::max(largest, need);
    total += need;
  }
  smallest = std::min(smallest, largest);
  const double kind = d.real(0, 1);
  const int64_t blocks = kind < 0.35  ? total + 1
                         : kind < 0.8 ? std::max(largest, total / d.uniform(2, 6))
                                      : d.uniform(smallest, largest + largest / 4 + 1);
  return std::clamp<int64_t>(blocks, 1, s.max_kv_blocks);
}

SamplingParams draw_sampling(Draw& d) {
  SamplingParams p;
  if (d.coin(0.5)) return p;  // greedy beside sampled ones
  p.temperature = d.pick(std::vector<double>{0.5, 0.8, 1.0, 1.3});
  p.top_k = d.pick(std::vector<int64_t>{0, 0, 1, 5, 40});
  p.top_p = d.pick(std::vector<double>{1.0, 1.0, 0.9, 0.5});
  return p;
}

// The server path's prompts: ids drawn per request, a shared prefix's ids drawn once per prefix
// id; now and then a request repeats an earlier one's whole prompt (a prefix hit up to the last
// block, whose last token must still be computed). Some requests stop at a stop token, some
// clients go away.
void draw_online(Draw& d, const StressSpace& s, StressCase& c) {
  std::map<int64_t, std::vector<int32_t>> prefixes;
  const auto ids = [&](int64_t count) {
    std::vector<int32_t> out(static_cast<size_t>(count));
    for (auto& id : out) id = static_cast<int32_t>(d.uniform(0, s.vocab - 1));
    return out;
  };
  for (size_t i = 0; i < c.requests.size(); ++i) {
    StressRequest& q = c.requests[i];
    ServeRequest& r = q.request;
    if (i > 0 && d.coin(0.1)) {
      const StressRequest& earlier = c.requests[static_cast<size_t>(d.uniform(0, i - 1))];
      q.prompt = earlier.prompt;
      r.prompt_tokens = earlier.request.prompt_tokens;
      r.prefix_id = -1;
      r.prefix_tokens = 0;
    } else {
      q.prompt = ids(r.prompt_tokens);
      if (r.prefix_id >= 0) {
        auto& prefix = prefixes[r.prefix_id];
        if (static_cast<int64_t>(prefix.size()) < r.prefix_tokens) {
          const auto more = ids(r.prefix_tokens - static_cast<int64_t>(prefix.size()));
          prefix.insert(prefix.end(), more.begin(), more.end());
        }
        std::copy_n(prefix.begin(), r.prefix_tokens, q.prompt.begin());
      }
    }
    q.sampling = draw_sampling(d);
    q.seed = d.next();
    if (d.coin(0.1)) {
      q.stop_after = d.uniform(1, r.output_tokens);
    } else if (d.coin(0.1)) {  // at any point: waiting, mid-prefill, swapped out, decoding
      q.cancel_after_s = d.real(0.0, 0.05);
    }
  }
}

}  // namespace

const char* drafting_name(Drafting drafting) {
  switch (drafting) {
    case Drafting::none:
      return "none";
    case Drafting::ngram:
      return "ngram";
    case Drafting::draft_itself:
      return "draft-itself";
    case Drafting::draft_first_layer:
      return "draft-first-layer";
    case Drafting::draft_small:
      return "draft-small";
  }
  return "?";
}

ModelRole draft_role(Drafting drafting) {
  switch (drafting) {
    case Drafting::draft_itself:
      return ModelRole::draft_itself;
    case Drafting::draft_first_layer:
      return ModelRole::draft_first_layer;
    default:
      return ModelRole::draft_small;
  }
}

bool must_reject(const ServeRequest& request, const SchedulerConfig& config) {
  if (exceeds_max_model_len(request, config)) return true;
  const int64_t positions = request.prompt_tokens + request.output_tokens - 1;
  return (positions + config.block_size - 1) / config.block_size > config.kv_blocks;
}

StressCase draw_case(uint64_t seed, const StressSpace& space) {
  Draw d(seed);
  StressCase c;
  c.seed = seed;
  c.context = space.context;
  c.online = d.coin(0.5);
  SchedulerConfig& e = c.config;
  e.seed = seed;
  e.policy = d.coin(0.5) ? SchedulePolicy::chunked : SchedulePolicy::vllm;
  e.max_num_seqs = d.log_uniform(1, 256);
  e.max_num_batched_tokens = d.log_uniform(256, 8192);
  e.block_size = d.pick(space.block_sizes);
  e.prefix_caching = d.coin(0.5);
  e.preemption = d.coin(0.5) ? PreemptionMode::swap : PreemptionMode::recompute;
  e.max_model_len = d.coin(0.7) ? space.context : d.uniform(space.context / 4, space.context);
  const double r = d.real(0, 1);
  c.drafting = r < 0.35   ? Drafting::none
               : r < 0.6  ? Drafting::ngram
               : r < 0.73 ? Drafting::draft_itself
               : r < 0.86 ? Drafting::draft_first_layer
                          : Drafting::draft_small;
  if (c.drafting != Drafting::none) e.speculative.k = static_cast<int>(d.uniform(1, 5));
  c.quant = d.pick(space.weight_formats);
  c.quant.kv = d.pick(space.kv_formats);
  c.cuda_graphs = space.cuda_graphs && d.coin(0.5);
  for (const ServeRequest& r : draw_lengths(d, space, e)) c.requests.push_back({r, {}, {}, 0, 0});
  std::vector<ServeRequest> lengths;
  for (const auto& q : c.requests) lengths.push_back(q.request);
  e.kv_blocks = draw_pool(d, space, e, lengths);
  if (c.online) draw_online(d, space, c);
  return c;
}

std::string StressCase::describe() const {
  int64_t rejected = 0, sampled = 0, prefixed = 0, longest = 0;
  for (const StressRequest& q : requests) {
    rejected += must_reject(q.request, config);
    sampled += sampling_draws(q.sampling);
    prefixed += q.request.prefix_id >= 0;
    longest = std::max(longest, q.request.prompt_tokens + q.request.output_tokens);
  }
  return fmt::format(
      "seed {}: {} path, policy {}, max-num-seqs {}, max-num-batched-tokens {}, block {}, "
      "pool {} blocks, prefix caching {}, preemption {}, max-model-len {}, speculation {} k {}, "
      "{}, cuda graphs {}; {} requests ({} to be rejected, {} sampled, {} with a shared prefix, "
      "longest {} tokens)",
      seed, online ? "server" : "serve", schedule_policy_name(config.policy), config.max_num_seqs,
      config.max_num_batched_tokens, config.block_size, config.kv_blocks,
      config.prefix_caching ? "on" : "off",
      config.preemption == PreemptionMode::swap ? "swap" : "recompute", config.max_model_len,
      drafting_name(drafting), config.speculative.k, quant.describe(), cuda_graphs ? "on" : "off",
      requests.size(), rejected, sampled, prefixed, longest);
}

bool StressCase::has_sampling() const {
  return std::any_of(requests.begin(), requests.end(),
                     [](const StressRequest& q) { return sampling_draws(q.sampling); });
}

}  // namespace inferlab::engine::stress
