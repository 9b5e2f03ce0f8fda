#include "engine/speculative.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "util/error.hpp"

namespace inferlab::engine {

namespace {
using Clock = std::chrono::steady_clock;
using Distribution = std::vector<std::pair<int32_t, double>>;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double probability_of(const Distribution& distribution, int32_t token) {
  for (const auto& [t, p] : distribution) {
    if (t == token) return p;
  }
  return 0.0;
}

// max(0, p − q) renormalized, in p's order; q empty means a point mass on `drafted`.
Distribution residual(const Distribution& p, const Distribution& q, int32_t drafted) {
  std::unordered_map<int32_t, double> q_of;
  if (q.empty()) {
    q_of[drafted] = 1.0;
  } else {
    for (const auto& [t, prob] : q) q_of[t] = prob;
  }
  Distribution out;
  double total = 0;
  for (const auto& [t, prob] : p) {
    auto it = q_of.find(t);
    const double r = prob - (it == q_of.end() ? 0.0 : it->second);
    if (r > 0) {
      out.emplace_back(t, r);
      total += r;
    }
  }
  if (!(total > 0)) return p;  // p ≤ q everywhere: only rounding can get here
  for (auto& entry : out) entry.second /= total;
  return out;
}
}  // namespace

SpeculativeOptions parse_speculative(const std::string& text, std::string& draft_model) {
  if (text.empty()) throw InputError("--speculative is empty; e.g. ngram,k=4 or draft=MODEL,k=4");
  const SpeculativeSpec spec = parse_speculative_spec(text);
  if (spec.acceptance) {
    throw InputError(
        "--speculative accept= is the simulator's assumed acceptance; the engine measures its "
        "own (drop accept=)");
  }
  if (spec.proposed_mean) {
    throw InputError(
        "--speculative propose= is the simulator's assumed proposal length; the engine proposes "
        "what it finds (drop propose=)");
  }
  SpeculativeOptions options;
  options.drafter =
      spec.ngram() ? SpeculativeOptions::Drafter::ngram : SpeculativeOptions::Drafter::model;
  draft_model = spec.ngram() ? "" : spec.draft;
  options.k = spec.k;
  options.ngram_max = spec.ngram_max;
  return options;
}

std::vector<int32_t> ngram_proposal(std::span<const int32_t> context, int64_t k, int64_t ngram_max,
                                    int64_t ngram_min) {
  const int64_t length = static_cast<int64_t>(context.size());
  for (int64_t n = std::min(ngram_max, length - 1); n >= std::max<int64_t>(ngram_min, 1); --n) {
    const auto suffix = context.subspan(static_cast<size_t>(length - n));
    // The latest earlier occurrence: start from the right, excluding the suffix itself.
    for (int64_t start = length - n - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), context.begin() + start)) continue;
      const int64_t from = start + n;
      const int64_t take = std::min(k, length - from);
      return {context.begin() + from, context.begin() + from + take};
    }
  }
  return {};
}

Verdict verify_draft(std::span<const std::span<const float>> target_rows,
                     std::span<const int32_t> draft,
                     std::span<const std::vector<std::pair<int32_t, double>>> draft_distributions,
                     const SamplingParams& params, Xoshiro256& rng) {
  if (target_rows.size() != draft.size() + 1) {
    throw std::invalid_argument("verify_draft: needs one more target row than draft tokens");
  }
  if (!sampling_draws(params)) {
    std::vector<int32_t> ids;
    for (const auto& row : target_rows) ids.push_back(argmax(row));
    return greedy_verdict(ids, draft);
  }
  Verdict verdict;
  for (size_t i = 0; i < draft.size(); ++i) {
    const Distribution p = sampling_distribution(target_rows[i], params);
    const bool point_mass = i >= draft_distributions.size() || draft_distributions[i].empty();
    const Distribution empty;
    const Distribution& q = point_mass ? empty : draft_distributions[i];
    const double p_d = probability_of(p, draft[i]);
    const double q_d = point_mass ? 1.0 : probability_of(q, draft[i]);
    if (q_d > 0 && rng.uniform() < std::min(1.0, p_d / q_d)) {
      verdict.tokens.push_back(draft[i]);
      ++verdict.accepted;
      continue;
    }
    verdict.tokens.push_back(pick_token(residual(p, q, draft[i]), rng.uniform()));
    return verdict;
  }
  verdict.tokens.push_back(sample_token(target_rows.back(), params, rng));
  return verdict;
}

Verdict greedy_verdict(std::span<const int32_t> target_ids, std::span<const int32_t> draft) {
  if (target_ids.size() != draft.size() + 1) {
    throw std::invalid_argument("greedy_verdict: needs one more target id than draft tokens");
  }
  Verdict verdict;
  for (size_t i = 0; i < draft.size(); ++i) {
    verdict.tokens.push_back(target_ids[i]);
    if (target_ids[i] != draft[i]) return verdict;
    ++verdict.accepted;
  }
  verdict.tokens.push_back(target_ids.back());
  return verdict;
}

void check_draft_vocabulary(const LlamaConfig& target, const LlamaConfig& draft) {
  if (draft.model.vocab_size != target.model.vocab_size) {
    throw InputError("the draft model's vocabulary (" + std::to_string(draft.model.vocab_size) +
                     " tokens) is not the target's (" + std::to_string(target.model.vocab_size) +
                     "); they must share the tokenizer");
  }
}

namespace {
// The draft model's side of a round: feeds it what it has not seen, then its own proposals one
// at a time, up to k tokens.
class ModelDrafter {
 public:
  // `prefill_chunk_tokens`: the draft prefills a long prompt in chunks too (0: whole).
  ModelDrafter(Backend& draft, int64_t prefill_chunk_tokens)
      : draft_(draft),
        allocator_(draft.kv_layout().num_blocks),
        prefill_chunk_tokens_(prefill_chunk_tokens) {}
  ~ModelDrafter() { allocator_.release(table_); }

  void propose(const std::vector<int32_t>& context, int64_t k, const SamplingParams& params,
               Xoshiro256& rng, std::vector<int32_t>& tokens, std::vector<Distribution>& qs,
               SpeculativeStats& stats) {
    std::vector<int32_t> sequence = context;
    ForwardBatch batch;
    batch.sequences.resize(1);
    SequenceChunk& chunk = batch.sequences[0];
    if (cached_ == 0) {  // the first round: the prompt, all but its last chunk
      cached_ = static_cast<int64_t>(sequence.size()) -
                static_cast<int64_t>(prefill_leading_chunks(draft_, allocator_, table_, sequence,
                                                            prefill_chunk_tokens_)
                                         .size());
    }
    for (int64_t j = 0; j < k; ++j) {
      chunk.tokens.assign(sequence.begin() + cached_, sequence.end());
      chunk.cached_tokens = cached_;
      allocator_.grow(table_, static_cast<int64_t>(sequence.size()), draft_.kv_layout().block_size);
      chunk.block_table = table_;
      ++stats.draft_passes;
      Distribution q;
      int32_t token = 0;
      if (sampling_draws(params)) {  // the verdict needs the draft's whole distribution
        const ForwardResult result = draft_.forward(batch);
        token = sample_token(result.last(0), params, rng, &q);
      } else {  // greedy: the argmax picked where the logits are (a GPU's sampler, graphs)
        const SampleSpec greedy{params, 0.0};
        token = draft_.forward_sample(batch, std::span<const SampleSpec>(&greedy, 1))[0];
      }
      cached_ = static_cast<int64_t>(sequence.size());
      tokens.push_back(token);
      qs.push_back(std::move(q));
      sequence.push_back(token);
    }
  }
  // Positions past `valid` held proposals the target rejected.
  void keep(int64_t valid) { cached_ = std::min(cached_, valid); }

 private:
  Backend& draft_;
  BlockAllocator allocator_;
  BlockTable table_;
  int64_t cached_ = 0;
  int64_t prefill_chunk_tokens_ = 0;
};

void check_sizes(Backend& target, Backend* draft, int64_t prompt_tokens,
                 const GenerateOptions& options, const SpeculativeOptions& speculative) {
  // Verification writes up to k rejected positions past the accepted ones.
  const int64_t slots = prompt_tokens + options.max_new_tokens + speculative.k;
  check_generation_fits(target, prompt_tokens, options, slots);
  if (draft != nullptr) check_generation_fits(*draft, prompt_tokens, options, slots);
  if (speculative.drafter == SpeculativeOptions::Drafter::model) {
    if (draft == nullptr) throw InputError("speculative decoding with a draft model needs one");
    check_draft_vocabulary(target.config(), draft->config());
  }
}
}  // namespace

GenerateResult generate_speculative(Backend& target, Backend* draft,
                                    std::span<const int32_t> prompt, const GenerateOptions& options,
                                    const SpeculativeOptions& speculative,
                                    const std::function<void(int32_t)>& on_token,
                                    SpeculativeStats* stats_out) {
  const int64_t prompt_tokens = static_cast<int64_t>(prompt.size());
  check_sizes(target, draft, prompt_tokens, options, speculative);
  const bool use_model = speculative.drafter == SpeculativeOptions::Drafter::model;
  SpeculativeStats stats;
  GenerateResult result;
  Xoshiro256 rng(options.seed);
  BlockAllocator allocator(target.kv_layout().num_blocks);
  BlockTable table;
  std::vector<int32_t> context(prompt.begin(), prompt.end());
  std::unique_ptr<ModelDrafter> drafter;
  if (use_model) drafter = std::make_unique<ModelDrafter>(*draft, options.prefill_chunk_tokens);

  const auto start = Clock::now();
  auto first_token_time = start;
  bool done = false;
  // Appends one token; true when the sequence ends with it.
  auto emit = [&](int32_t token) {
    context.push_back(token);
    result.tokens.push_back(token);
    if (result.tokens.size() == 1) first_token_time = Clock::now();
    if (on_token) on_token(token);
    result.finish_reason = finish_reason_after(result, token, options);
    return !result.finish_reason.empty();
  };

  ForwardBatch batch;
  batch.sequences.resize(1);
  SequenceChunk& chunk = batch.sequences[0];
  const std::span<const int32_t> last_chunk =
      prefill_leading_chunks(target, allocator, table, prompt, options.prefill_chunk_tokens);
  chunk.tokens.assign(last_chunk.begin(), last_chunk.end());
  chunk.cached_tokens = prompt_tokens - static_cast<int64_t>(last_chunk.size());
  allocator.grow(table, prompt_tokens, target.kv_layout().block_size);
  chunk.block_table = table;
  {
    const ForwardResult prefill = target.forward(batch);
    done = emit(sample_token(prefill.last(0), options.sampling, rng));
  }
  while (!done) {
    const int64_t remaining = options.max_new_tokens - static_cast<int64_t>(result.tokens.size());
    const int64_t k = std::min(speculative.k, remaining - 1);  // a round emits accepted + 1
    std::vector<int32_t> proposal;
    std::vector<Distribution> qs;
    const auto draft_start = Clock::now();
    if (k > 0 && use_model) {
      drafter->propose(context, k, options.sampling, rng, proposal, qs, stats);
    } else if (k > 0) {
      proposal = ngram_proposal(context, k, speculative.ngram_max, speculative.ngram_min);
    }
    stats.draft_s += seconds_since(draft_start);

    const int64_t length = static_cast<int64_t>(context.size());
    chunk.tokens.assign(1, context.back());
    chunk.tokens.insert(chunk.tokens.end(), proposal.begin(), proposal.end());
    chunk.cached_tokens = length - 1;
    chunk.all_logits = true;
    allocator.grow(table, length + static_cast<int64_t>(proposal.size()),
                   target.kv_layout().block_size);
    chunk.block_table = table;
    const auto verify_start = Clock::now();
    Verdict verdict;
    if (sampling_draws(options.sampling)) {  // rejection sampling needs the target's rows
      const ForwardResult scored = target.forward(batch);
      std::vector<std::span<const float>> rows;
      for (int64_t r = 0; r < scored.rows(0); ++r)
        rows.push_back(scored.row(scored.first_row[0] + r));
      verdict = verify_draft(rows, proposal, qs, options.sampling, rng);
    } else {  // greedy: each row's argmax, taken where the logits are (a GPU copies back ids)
      verdict = greedy_verdict(target.forward_argmax_rows(batch), proposal);
    }
    stats.verify_s += seconds_since(verify_start);
    ++stats.rounds;
    stats.proposed += static_cast<int64_t>(proposal.size());
    stats.accepted += verdict.accepted;
    if (use_model) drafter->keep(length + verdict.accepted);
    for (int32_t token : verdict.tokens) {
      if ((done = emit(token))) break;
    }
  }
  allocator.release(table);
  set_generate_timing(result, start, first_token_time, Clock::now());
  if (stats_out != nullptr) *stats_out = stats;
  return result;
}

double speculative_speedup(double acceptance, int64_t k, double draft_step_cost,
                           double verify_cost) {
  if (!(acceptance >= 0 && acceptance <= 1) || k < 1 || !(verify_cost > 0) ||
      !(draft_step_cost >= 0)) {
    throw std::invalid_argument("speculative_speedup: acceptance in [0, 1], k ≥ 1, costs > 0");
  }
  const double tokens_per_round =
      acceptance >= 1.0
          ? static_cast<double>(k + 1)
          : (1.0 - std::pow(acceptance, static_cast<double>(k + 1))) / (1.0 - acceptance);
  return tokens_per_round / (static_cast<double>(k) * draft_step_cost + verify_cost);
}

}  // namespace inferlab::engine
