#include "engine/speculative_bench.hpp"

#include <chrono>

#include "util/error.hpp"
#include "util/rng.hpp"

namespace inferlab::engine {

namespace {
using Clock = std::chrono::steady_clock;

// One sequence with context_tokens random ids in the cache, and room for k + 1 more.
struct Primed {
  BlockAllocator allocator;
  SequenceChunk chunk;
  Primed(Backend& backend, int64_t context_tokens, int64_t extra, uint64_t seed)
      : allocator(backend.kv_layout().num_blocks) {
    const auto& layout = backend.kv_layout();
    if (layout.blocks_for(context_tokens + extra) > layout.num_blocks) {
      throw InputError("--speculative: a context of " + std::to_string(context_tokens) +
                       " tokens plus " + std::to_string(extra) + " does not fit the KV cache of " +
                       std::to_string(layout.slots()));
    }
    Xoshiro256 rng(seed);
    const auto vocab = static_cast<uint64_t>(backend.config().model.vocab_size);
    for (int64_t t = 0; t < context_tokens; ++t) {
      chunk.tokens.push_back(static_cast<int32_t>(rng.next() % vocab));
    }
    allocator.grow(chunk.block_table, context_tokens + extra, layout.block_size);
    ForwardBatch batch{{chunk}};
    backend.forward(batch);
    chunk.cached_tokens = context_tokens;
  }
};

// Times forward passes of `tokens` new tokens after the primed context (the same positions
// each time: their keys and values are rewritten, the work is the same).
// A plain decode step (`tokens` 1, not all_logits) samples on the device as generate does; a
// verification pass (all_logits) takes every row's argmax there, as generate_speculative's
// greedy verdict does (sampling verdicts bring the rows to the host instead).
class Pass {
 public:
  Pass(Backend& backend, const Primed& primed, int64_t tokens, bool all_logits)
      : backend_(backend), batch_{{primed.chunk}} {
    batch_.sequences[0].tokens.assign(static_cast<size_t>(tokens), 1);
    batch_.sequences[0].all_logits = all_logits;
  }
  // Runs the pass; its host wall time, and its device time (or the wall where there is none).
  void run(double& wall_s, double& device_or_wall_s, bool& device_timed) {
    const auto start = Clock::now();
    if (batch_.sequences[0].all_logits) {
      backend_.forward_argmax_rows(batch_);
    } else {
      backend_.forward_sample(batch_, std::span<const SampleSpec>(&greedy_, 1));
    }
    wall_s = std::chrono::duration<double>(Clock::now() - start).count();
    const double device = backend_.last_forward_device_s();
    device_timed = device >= 0;
    device_or_wall_s = device >= 0 ? device : wall_s;
  }

 private:
  Backend& backend_;
  ForwardBatch batch_;
  const SampleSpec greedy_{};
};

struct PassTimes {
  TimingStats device_or_wall, wall;
};
PassTimes time_passes(Backend& backend, Primed& primed, int64_t tokens, bool all_logits,
                      int64_t repeats, bool& device_timed) {
  Pass pass(backend, primed, tokens, all_logits);
  double wall = 0.0, device = 0.0;
  pass.run(wall, device, device_timed);  // warm-up (plans, first-touch)
  std::vector<double> samples, walls;
  for (int64_t r = 0; r < repeats; ++r) {
    pass.run(wall, device, device_timed);
    samples.push_back(device);
    walls.push_back(wall);
  }
  return {timing_stats(samples), timing_stats(walls)};
}

// Rounds as generate_speculative runs them with a draft model: k draft steps, then the target's
// verification of k + 1 tokens, each waited for. The verification is timed inside the round too:
// after the draft's passes it need not cost what it costs back to back.
void time_rounds(Backend& target, Primed& target_primed, Backend& draft, Primed& draft_primed,
                 int64_t k, int64_t repeats, SpeculativeCosts& costs) {
  Pass verify(target, target_primed, k + 1, true), step(draft, draft_primed, 1, false);
  std::vector<double> rounds, verify_device, verify_wall;
  double wall = 0.0, device = 0.0;
  bool timed = false;
  for (int64_t r = 0; r <= repeats; ++r) {  // the first round warms up
    const auto start = Clock::now();
    for (int64_t j = 0; j < k; ++j) step.run(wall, device, timed);
    verify.run(wall, device, timed);
    if (r == 0) continue;
    rounds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    verify_device.push_back(device);
    verify_wall.push_back(wall);
  }
  costs.round_wall = timing_stats(rounds);
  costs.verify_in_round = timing_stats(verify_device);
  costs.verify_in_round_wall = timing_stats(verify_wall);
}
}  // namespace

SpeculativeCosts measure_speculative_costs(Backend& target, Backend* draft,
                                           const SpeculativeOptions& speculative,
                                           int64_t context_tokens, int64_t repeats, uint64_t seed) {
  if (context_tokens < 1 || repeats < 1) {
    throw InputError("--speculative: the context and repeats must be at least 1");
  }
  SpeculativeCosts costs;
  costs.k = speculative.k;
  costs.context_tokens = context_tokens;
  Primed target_primed(target, context_tokens, speculative.k + 1, seed);
  // Plain decoding samples from the last row only; greedy verification takes every row's argmax.
  const PassTimes decode =
      time_passes(target, target_primed, 1, false, repeats, costs.device_timed);
  const PassTimes verify =
      time_passes(target, target_primed, speculative.k + 1, true, repeats, costs.device_timed);
  costs.decode_step = decode.device_or_wall, costs.decode_step_wall = decode.wall;
  costs.verify = verify.device_or_wall, costs.verify_wall = verify.wall;
  if (speculative.drafter == SpeculativeOptions::Drafter::model) {
    if (draft == nullptr) throw InputError("--speculative draft=…: no draft model");
    Primed draft_primed(*draft, context_tokens, speculative.k + 1, seed + 1);
    bool draft_device_timed = false;
    const PassTimes step = time_passes(*draft, draft_primed, 1, false, repeats, draft_device_timed);
    costs.draft_step = step.device_or_wall, costs.draft_step_wall = step.wall;
    time_rounds(target, target_primed, *draft, draft_primed, speculative.k, repeats, costs);
  } else {
    std::vector<int32_t> context = target_primed.chunk.tokens;
    std::vector<double> samples;
    for (int64_t r = 0; r < repeats; ++r) {
      const auto start = Clock::now();
      auto proposal =
          ngram_proposal(context, speculative.k, speculative.ngram_max, speculative.ngram_min);
      samples.push_back(std::chrono::duration<double>(Clock::now() - start).count());
      context.push_back(proposal.empty() ? 0 : proposal.front());
    }
    costs.draft_step = costs.draft_step_wall = timing_stats(samples);
  }
  const double step = costs.decode_step.median_s;
  for (double acceptance : {0.5, 0.6, 0.7, 0.8, 0.9, 1.0}) {
    // n-gram drafting is one lookup per round, not per token: spread it over the k tokens.
    const double draft_per_token =
        speculative.drafter == SpeculativeOptions::Drafter::model
            ? costs.draft_step.median_s / step
            : costs.draft_step.median_s / step / static_cast<double>(speculative.k);
    costs.speedup_at_acceptance.emplace_back(
        acceptance, speculative_speedup(acceptance, speculative.k, draft_per_token,
                                        costs.verify.median_s / step));
  }
  return costs;
}

}  // namespace inferlab::engine
