#include "engine/serving_executor.hpp"

#include <algorithm>
#include <chrono>
#include <span>
#include <stdexcept>

#include "engine/speculative.hpp"
#include "serve/workload.hpp"
#include "util/rng.hpp"

namespace inferlab::engine {

namespace {

// 256 MiB of fp32 logit rows per pass, at least 64 rows (Llama 3's vocabulary: 523 rows).
int64_t default_max_logit_rows(int64_t vocab_size) {
  constexpr int64_t kBytes = int64_t{256} << 20;
  return std::max<int64_t>(64, kBytes / (4 * std::max<int64_t>(vocab_size, 1)));
}

// One forward pass of a host-logits iteration: pieces of the planned chunks, in order. Piece j
// is item items[j]'s chunk from token offsets[j] on.
struct SubPass {
  ForwardBatch batch;
  std::vector<size_t> items;
  std::vector<int64_t> offsets;
};

// The planned batch as passes of at most `max_rows` logit rows each: a scored prompt chunk that
// does not fit is cut (its pieces run one after another, each after the positions before it);
// any other chunk (one row, or a draft's 1 + k) goes whole into a pass of its own if it must.
std::vector<SubPass> split_by_rows(const ForwardBatch& batch, const std::vector<bool>& splittable,
                                   int64_t max_rows) {
  std::vector<SubPass> passes(1);
  int64_t rows = 0;
  const auto add = [&](size_t item, const SequenceChunk& chunk, int64_t offset, int64_t count) {
    SequenceChunk piece;
    piece.tokens.assign(chunk.tokens.begin() + offset, chunk.tokens.begin() + offset + count);
    piece.cached_tokens = chunk.cached_tokens + offset;
    piece.block_table = chunk.block_table;
    piece.all_logits = chunk.all_logits;
    passes.back().batch.sequences.push_back(std::move(piece));
    passes.back().items.push_back(item);
    passes.back().offsets.push_back(offset);
    rows += chunk.all_logits ? count : 1;
  };
  const auto next_pass = [&] {
    if (passes.back().items.empty()) return;
    passes.emplace_back();
    rows = 0;
  };
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    const SequenceChunk& chunk = batch.sequences[i];
    const auto tokens = static_cast<int64_t>(chunk.tokens.size());
    if (!chunk.all_logits || !splittable[i]) {
      const int64_t need = chunk.all_logits ? tokens : 1;
      if (rows + need > max_rows) next_pass();
      add(i, chunk, 0, tokens);
      continue;
    }
    for (int64_t offset = 0; offset < tokens;) {
      if (rows >= max_rows) next_pass();
      const int64_t count = std::min(tokens - offset, max_rows - rows);
      add(i, chunk, offset, count);
      offset += count;
    }
  }
  return passes;
}

BlockTable table_of(const ScheduledIteration& iteration, int64_t seq) {
  BlockTable table;
  for (int64_t block : iteration.blocks->blocks_of(seq)) {
    table.push_back(static_cast<int32_t>(block));
  }
  return table;
}

}  // namespace

ServingExecutor::ServingExecutor(Backend& backend, const std::vector<ServeRequest>& requests,
                                 uint64_t seed, int64_t ngram_max)
    : backend_(backend),
      ngram_max_(ngram_max),
      max_logit_rows_(default_max_logit_rows(backend.config().model.vocab_size)) {
  const int64_t vocab = backend.config().model.vocab_size;
  for (size_t i = 0; i < requests.size(); ++i) {
    records_.push_back({synthetic_prompt(requests[i], i, seed, vocab), {}, {}, Xoshiro256(seed)});
  }
}

ServingExecutor::ServingExecutor(Backend& backend, int64_t ngram_max)
    : backend_(backend),
      ngram_max_(ngram_max),
      max_logit_rows_(default_max_logit_rows(backend.config().model.vocab_size)) {}

void ServingExecutor::add_request(int64_t id, std::vector<int32_t> prompt,
                                  const SamplingParams& sampling, uint64_t seed,
                                  const LogprobRequest& logprobs) {
  if (static_cast<size_t>(id) != first_id_ + records_.size()) {
    throw std::logic_error("serving executor: requests must be added in id order");
  }
  // The generator as generate()'s Sampler seeds it: the same seed, the same draws.
  records_.push_back({std::move(prompt), {}, sampling, Xoshiro256(seed)});
  Record& record = records_.back();
  record.logprobs = logprobs;
  if (logprobs.prompt) {
    record.prompt_logprobs.resize(record.prompt.empty() ? 0 : record.prompt.size() - 1);
    record.prompt_scored = record.prompt_logprobs.empty();  // one token: nothing to score
  }
}

void ServingExecutor::release(int64_t id) {
  swap_space_.forget(id);  // a request ended while swapped out
  Record& record = at(static_cast<size_t>(id));
  record.released = true;
  record.prompt = {};
  record.generated = {};
  record.generated_logprobs = {};
  record.prompt_logprobs = {};
  if (drafter_) drafter_->forget(id);
  while (!records_.empty() && records_.front().released) {
    records_.pop_front();
    ++first_id_;
  }
}

int32_t ServingExecutor::token_at(size_t request, int64_t position) const {
  const Record& record = at(request);
  const auto& prompt = record.prompt;
  if (position < static_cast<int64_t>(prompt.size())) return prompt[static_cast<size_t>(position)];
  return record.generated[static_cast<size_t>(position - static_cast<int64_t>(prompt.size()))];
}

std::vector<int32_t> ServingExecutor::draft(size_t request, int64_t k) {
  std::vector<int32_t> context = at(request).prompt;
  context.insert(context.end(), at(request).generated.begin(), at(request).generated.end());
  std::vector<int32_t> tokens = ngram_proposal(context, k, ngram_max_, 1);
  while (static_cast<int64_t>(tokens.size()) < k) tokens.push_back(context.back());
  return tokens;
}

void ServingExecutor::set_draft_model(Backend& draft) {
  drafter_ = std::make_unique<BatchDrafter>(draft, backend_);
}

BatchDrafter::Proposals ServingExecutor::model_drafts(const ScheduledIteration& iteration) {
  std::vector<BlockTable> tables;
  tables.reserve(iteration.work.size());  // the items point into it
  std::vector<BatchDrafter::Item> items;
  for (const Work& w : iteration.work) {
    Record& record = at(static_cast<size_t>(w.seq->id));
    tables.push_back(table_of(iteration, w.seq->id));
    items.push_back({w.seq->id, w.seq->computed, w.new_tokens, w.decode, &tables.back(),
                     &record.sampling, &record.rng});
  }
  return drafter_->propose(items, [this](int64_t seq, int64_t position) {
    return token_at(static_cast<size_t>(seq), position);
  });
}

double ServingExecutor::apply_swaps(const std::vector<KvSwap>& swaps) {
  if (swaps.empty()) return 0.0;
  const auto start = std::chrono::steady_clock::now();
  for (const KvSwap& swap : swaps) {
    const std::vector<int32_t> blocks(swap.blocks.begin(), swap.blocks.end());
    if (drafter_) drafter_->swap(swap.seq, swap.to_host, blocks);  // the draft's KV moves too
    if (swap.to_host) {
      swap_space_.swap_out(swap.seq, blocks);
    } else if (!swap_space_.swap_in(swap.seq, blocks)) {
      throw std::logic_error("serving executor: a swap-in of a sequence never swapped out");
    }
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

ServingExecutor::PlannedPass ServingExecutor::plan_pass(const ScheduledIteration& iteration) {
  PlannedPass pass;
  pass.drafts.resize(iteration.work.size());
  // The draft model's passes come first: the target scores their proposals. Without one, the
  // proposals stay empty and drafts come from n-gram lookup.
  if (drafter_) pass.proposals = model_drafts(iteration);
  for (size_t i = 0; i < iteration.work.size(); ++i) {
    const Work& w = iteration.work[i];
    const auto request = static_cast<size_t>(w.seq->id);
    const Record& record = at(request);
    SequenceChunk chunk;
    chunk.cached_tokens = w.seq->computed;
    bool scores_prompt = false;
    if (w.decode && w.new_tokens > 1) {  // the last token, then the drafts
      chunk.tokens.push_back(token_at(request, w.seq->computed));
      pass.drafts[i] =
          drafter_ ? std::move(pass.proposals.tokens[i]) : draft(request, w.new_tokens - 1);
      chunk.tokens.insert(chunk.tokens.end(), pass.drafts[i].begin(), pass.drafts[i].end());
      chunk.all_logits = true;
      pass.speculating = true;
    } else {
      for (int64_t p = w.seq->computed; p < w.seq->computed + w.new_tokens; ++p) {
        chunk.tokens.push_back(token_at(request, p));
      }
      // A prompt chunk before the prompt's last position, while its scores are still wanted
      // (a recompute after preemption does not score the prompt again).
      scores_prompt = !w.decode && record.logprobs.prompt && !record.prompt_scored &&
                      w.seq->computed < static_cast<int64_t>(record.prompt.size()) - 1;
      chunk.all_logits = scores_prompt;
    }
    chunk.block_table = table_of(iteration, w.seq->id);
    pass.batch.sequences.push_back(std::move(chunk));
    pass.samples.push_back(w.decode || w.seq->computed + w.new_tokens >= w.seq->target);
    pass.scores_prompt.push_back(scores_prompt);
    // Sampled drafts need the target's rows for their verdict (rejection sampling); greedy
    // ones only each row's argmax, which the backend takes where the logits are.
    const bool sampled_drafts = !pass.drafts[i].empty() && sampling_draws(record.sampling);
    pass.host_logits = pass.host_logits || scores_prompt || sampled_drafts ||
                       (pass.samples.back() && record.logprobs.sampled);
  }
  return pass;
}

ServingExecutor::Emitted ServingExecutor::run_sampled(const ScheduledIteration& iteration,
                                                      const PlannedPass& pass) {
  // One spec per item; with drafts (greedy: plan_pass sends sampled ones to the host), one per
  // logit row, a drafting item's 1 + k rows greedy.
  std::vector<SampleSpec> specs;
  for (size_t i = 0; i < pass.batch.sequences.size(); ++i) {
    const auto request = static_cast<size_t>(iteration.work[i].seq->id);
    SampleSpec spec{at(request).sampling, 0.0};
    if (!pass.drafts[i].empty()) {
      specs.insert(specs.end(), pass.drafts[i].size() + 1, spec);  // no draw: greedy
      continue;
    }
    // A draw only where a token is kept, so a request's draws do not depend on its chunking.
    if (pass.samples[i] && sampling_draws(spec.params)) spec.uniform = at(request).rng.uniform();
    specs.push_back(spec);
  }
  // Without drafts, forward_sample (a decode-only batch replays its CUDA graph); with them, the
  // argmax of every row, so that only ids come back.
  const std::vector<int32_t> ids = pass.speculating
                                       ? backend_.forward_sample_rows(pass.batch, specs)
                                       : backend_.forward_sample(pass.batch, specs);
  Emitted out;
  out.tokens.resize(pass.batch.sequences.size());
  out.logprobs.resize(pass.batch.sequences.size());
  const std::span<const int32_t> all(ids);
  size_t row = 0;
  for (size_t i = 0; i < out.tokens.size(); ++i) {
    if (pass.drafts[i].empty()) {
      out.tokens[i] = {all[row++]};
      continue;
    }
    const size_t rows = pass.drafts[i].size() + 1;
    out.tokens[i] = greedy_verdict(all.subspan(row, rows), pass.drafts[i]).tokens;
    row += rows;
  }
  out.device_s = backend_.last_forward_device_s();
  return out;
}

void ServingExecutor::pick_on_host(size_t i, int64_t request, const PlannedPass& pass,
                                   std::span<const std::span<const float>> rows, Emitted& out) {
  Record& record = at(static_cast<size_t>(request));
  const SamplingParams& params = record.sampling;
  if (pass.drafts[i].empty()) {
    const std::span<const float> last = rows.back();
    out.tokens[i] = {pass.samples[i] && sampling_draws(params)
                         ? pick_token(sampling_distribution(last, params), record.rng.uniform())
                         : argmax(last)};
  } else {
    // The draft model's distributions for sampling requests; none for n-gram drafts (a point
    // mass) or greedy requests.
    const std::span<const BatchDrafter::Distribution> qs =
        drafter_ ? std::span<const BatchDrafter::Distribution>(pass.proposals.distributions[i])
                 : std::span<const BatchDrafter::Distribution>();
    out.tokens[i] = verify_draft(rows, pass.drafts[i], qs, params, record.rng).tokens;
  }
  if (!pass.samples[i] || !record.logprobs.sampled) return;
  // Emitted token k comes from row k: the last row without drafts; with drafts, the accepted
  // drafts' rows, then the row of the target's own token.
  const size_t first = pass.drafts[i].empty() ? rows.size() - 1 : 0;
  for (size_t k = 0; k < out.tokens[i].size(); ++k) {
    out.logprobs[i].push_back(
        position_logprobs(rows[first + k], out.tokens[i][k], record.logprobs.top));
  }
}

void ServingExecutor::score_prompt(int64_t request, const SequenceChunk& piece,
                                   std::span<const std::span<const float>> rows) {
  Record& record = at(static_cast<size_t>(request));
  const auto prompt = static_cast<int64_t>(record.prompt.size());
  // The pieces cover the prompt in order from position 0 (a recompute starts there again); a
  // prefix served from the cache would leave positions without rows.
  if (piece.cached_tokens > record.prompt_next) {
    throw std::logic_error(
        "serving executor: a scored prompt must run from position 0 (keep it out of the prefix "
        "cache)");
  }
  // Row r is position q's: it scores the token at q + 1, while that is a prompt token.
  for (size_t r = 0; r < rows.size(); ++r) {
    const int64_t q = piece.cached_tokens + static_cast<int64_t>(r);
    if (q + 1 >= prompt) break;
    record.prompt_logprobs[static_cast<size_t>(q)] =
        position_logprobs(rows[r], record.prompt[static_cast<size_t>(q + 1)], record.logprobs.top);
  }
  const int64_t end = piece.cached_tokens + static_cast<int64_t>(rows.size());
  record.prompt_next = end;
  if (end >= prompt - 1) record.prompt_scored = true;
}

ServingExecutor::Emitted ServingExecutor::run_on_host(const ScheduledIteration& iteration,
                                                      const PlannedPass& pass) {
  Emitted out;
  out.tokens.resize(iteration.work.size());
  out.logprobs.resize(iteration.work.size());
  out.device_s = 0;
  for (SubPass& sub :
       split_by_rows(pass.batch, pass.scores_prompt, std::max<int64_t>(max_logit_rows_, 1))) {
    const ForwardResult result = backend_.forward(sub.batch);
    const double device_s = backend_.last_forward_device_s();
    out.device_s = device_s >= 0 && out.device_s >= 0 ? out.device_s + device_s : -1;
    for (size_t j = 0; j < sub.items.size(); ++j) {
      const size_t i = sub.items[j];
      const int64_t request = iteration.work[i].seq->id;
      const SequenceChunk& piece = sub.batch.sequences[j];
      std::vector<std::span<const float>> rows;
      for (int64_t r = 0; r < result.rows(j); ++r)
        rows.push_back(result.row(result.first_row[j] + r));
      if (pass.scores_prompt[i]) score_prompt(request, piece, rows);
      const bool last_piece = sub.offsets[j] + static_cast<int64_t>(piece.tokens.size()) ==
                              static_cast<int64_t>(pass.batch.sequences[i].tokens.size());
      if (last_piece) pick_on_host(i, request, pass, rows, out);
    }
  }
  return out;
}

void ServingExecutor::record_kernels(const ScheduledIteration& iteration) {
  IterationKernels record{forward_passes_, 0, 0, backend_.last_forward_profile()};
  for (const Work& w : iteration.work) {
    if (w.decode) {
      ++record.decode_seqs;
    } else {
      record.prefill_tokens += w.new_tokens;
    }
  }
  kernel_profiles_.push_back(std::move(record));
}

IterationOutcome ServingExecutor::execute(const ScheduledIteration& iteration) {
  IterationOutcome outcome;
  // Swaps first, on the wall clock and counted as the device's (they are copies over the host
  // link); a swap-only iteration is nothing else.
  const double swap_s = apply_swaps(iteration.swaps);
  outcome.duration_s = outcome.device_s = swap_s;
  if (iteration.work.empty()) return outcome;
  const PlannedPass pass = plan_pass(iteration);
  if (profile_kernels_) backend_.set_profiling(true);
  const auto start = std::chrono::steady_clock::now();
  // Without drafts or logprobs, the fast path: sampled where the logits are.
  const Emitted emitted =
      pass.host_logits ? run_on_host(iteration, pass) : run_sampled(iteration, pass);
  // The draft model's passes are part of the iteration, on the wall clock and on the device.
  outcome.duration_s =
      swap_s + pass.proposals.wall_s +
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The CPU backend measures no device time (negative): all of it is the host's.
  outcome.device_s = emitted.device_s >= 0.0
                         ? swap_s + emitted.device_s + std::max(pass.proposals.device_s, 0.0)
                         : outcome.duration_s;
  if (profile_kernels_) record_kernels(iteration);
  ++forward_passes_;
  for (size_t i = 0; i < iteration.work.size(); ++i) {
    const Work& w = iteration.work[i];
    // A sequence that emits its last token does so here; one whose output is complete never
    // samples again, so every sampled token is one the scheduler emits.
    Record& record = at(static_cast<size_t>(w.seq->id));
    if (pass.samples[i]) {
      record.generated.insert(record.generated.end(), emitted.tokens[i].begin(),
                              emitted.tokens[i].end());
      record.generated_logprobs.insert(record.generated_logprobs.end(), emitted.logprobs[i].begin(),
                                       emitted.logprobs[i].end());
    }
    outcome.advance.push_back(w.decode ? static_cast<int64_t>(emitted.tokens[i].size())
                                       : w.new_tokens);
  }
  return outcome;
}

}  // namespace inferlab::engine
