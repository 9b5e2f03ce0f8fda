#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/backend.hpp"
#include "engine/generate.hpp"
#include "engine/sampling.hpp"
#include "serve/speculative_spec.hpp"
#include "util/rng.hpp"

namespace inferlab::engine {

// Speculative decoding (Leviathan et al. 2023, Chen et al. 2023): a drafter proposes up to k
// tokens, the target scores the last accepted token and the proposals in one forward pass, and
// modified rejection sampling keeps exactly the target's distribution. With greedy sampling
// the output is the token sequence plain decoding gives.
struct SpeculativeOptions {
  enum class Drafter { ngram, model };
  Drafter drafter = Drafter::ngram;
  int64_t k = 4;  // tokens proposed per round
  // Prompt lookup: the longest suffix of the context (ngram_max down to ngram_min tokens) that
  // occurred before proposes the tokens that followed its latest earlier occurrence.
  int64_t ngram_max = 3, ngram_min = 1;
};

// --speculative in the one grammar (serve/speculative_spec.hpp): "ngram,k=4", "ngram,k=4,n=3",
// "draft=ngram,k=4" or "draft=MODEL,k=4" (MODEL: a checkpoint folder or shipped name, returned in
// draft_model; empty for ngram). InputError on anything else, and for accept= (the simulator's
// assumption: the engine measures its acceptance).
SpeculativeOptions parse_speculative(const std::string& text, std::string& draft_model);

struct SpeculativeStats {
  int64_t rounds = 0;        // target verification passes after the prefill
  int64_t proposed = 0;      // draft tokens scored by the target
  int64_t accepted = 0;      // of those, kept
  int64_t draft_passes = 0;  // draft model forward passes (0 for n-gram drafting)
  double verify_s = 0;       // wall time of the verification passes
  double draft_s = 0;        // wall time of drafting (model passes or n-gram lookup)
  double acceptance() const { return proposed > 0 ? double(accepted) / double(proposed) : 0; }
};

// Up to k tokens following the latest earlier occurrence of the context's longest suffix of
// ngram_max..ngram_min tokens (none when no suffix recurs).
std::vector<int32_t> ngram_proposal(std::span<const int32_t> context, int64_t k, int64_t ngram_max,
                                    int64_t ngram_min);

// One round's verdict. target_rows[i] are the target's logits after context + draft[0..i)
// (draft.size() + 1 rows); draft_distributions[i] the drafter's distribution for draft[i], or
// empty for a point mass (n-gram). Greedy (sampling_draws false): draft[i] is kept while it is
// the target's argmax, then the argmax follows. Sampling: draft[i] is kept with probability
// min(1, p(d)/q(d)); the first rejection draws from max(0, p − q) renormalized; when all are
// kept the last row adds one more token. Returns the accepted draft tokens then that one token.
struct Verdict {
  int64_t accepted = 0;
  std::vector<int32_t> tokens;  // accepted draft tokens, then the target's token
};
Verdict verify_draft(std::span<const std::span<const float>> target_rows,
                     std::span<const int32_t> draft,
                     std::span<const std::vector<std::pair<int32_t, double>>> draft_distributions,
                     const SamplingParams& params, Xoshiro256& rng);

// The greedy verdict from the target's argmax of each row (target_ids: draft.size() + 1 ids, as
// Backend::forward_argmax_rows gives them): draft[i] is kept while it equals target_ids[i], then
// the target's id follows. verify_draft's greedy case, without the rows themselves.
Verdict greedy_verdict(std::span<const int32_t> target_ids, std::span<const int32_t> draft);

// InputError unless the draft model shares the target's vocabulary (its token ids are the
// target's: the same tokenizer).
void check_draft_vocabulary(const LlamaConfig& target, const LlamaConfig& draft);

// generate() with speculation: same contract, tokens and stop rules; `draft` is the draft model
// for Drafter::model (sharing the tokenizer), unused for n-gram. Stats, where given, are filled.
GenerateResult generate_speculative(Backend& target, Backend* draft,
                                    std::span<const int32_t> prompt, const GenerateOptions& options,
                                    const SpeculativeOptions& speculative,
                                    const std::function<void(int32_t)>& on_token = {},
                                    SpeculativeStats* stats = nullptr);

// Expected speed-up of speculation over plain decoding when each draft token is accepted with
// probability `acceptance` (independently): tokens per round (1 − α^(k+1)) / (1 − α) over the
// round's cost k · draft_step + verify, both in units of one plain decode step.
double speculative_speedup(double acceptance, int64_t k, double draft_step_cost,
                           double verify_cost);

}  // namespace inferlab::engine
