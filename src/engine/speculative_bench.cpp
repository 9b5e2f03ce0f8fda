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
TimingStats time_passes(Backend& backend, Primed& primed, int64_t tokens, bool all_logits,
                        int64_t repeats, bool& device_timed) {
  ForwardBatch batch{{primed.chunk}};
  batch.sequences[0].tokens.assign(static_cast<size_t>(tokens), 1);
  batch.sequences[0].all_logits = all_logits;
  const SampleSpec greedy;
  auto pass = [&] {
    if (all_logits) {
      backend.forward_argmax_rows(batch);
    } else {
      backend.forward_sample(batch, std::span<const SampleSpec>(&greedy, 1));
    }
  };
  pass();  // warm-up (plans, first-touch)
  std::vector<double> samples;
  for (int64_t r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    pass();
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();
    const double device = backend.last_forward_device_s();
    device_timed = device >= 0;
    samples.push_back(device >= 0 ? device : wall);
  }
  return timing_stats(samples);
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
  costs.decode_step = time_passes(target, target_primed, 1, false, repeats, costs.device_timed);
  costs.verify =
      time_passes(target, target_primed, speculative.k + 1, true, repeats, costs.device_timed);
  if (speculative.drafter == SpeculativeOptions::Drafter::model) {
    if (draft == nullptr) throw InputError("--speculative draft=…: no draft model");
    Primed draft_primed(*draft, context_tokens, speculative.k + 1, seed + 1);
    bool draft_device_timed = false;
    costs.draft_step = time_passes(*draft, draft_primed, 1, false, repeats, draft_device_timed);
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
    costs.draft_step = timing_stats(samples);
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
