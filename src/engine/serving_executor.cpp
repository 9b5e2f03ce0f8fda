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
    : backend_(backend), ngram_max_(ngram_max) {
  const int64_t vocab = backend.config().model.vocab_size;
  for (size_t i = 0; i < requests.size(); ++i) {
    records_.push_back({synthetic_prompt(requests[i], i, seed, vocab), {}, {}, Xoshiro256(seed)});
  }
}

ServingExecutor::ServingExecutor(Backend& backend, int64_t ngram_max)
    : backend_(backend), ngram_max_(ngram_max) {}

void ServingExecutor::add_request(int64_t id, std::vector<int32_t> prompt,
                                  const SamplingParams& sampling, uint64_t seed) {
  if (static_cast<size_t>(id) != first_id_ + records_.size()) {
    throw std::logic_error("serving executor: requests must be added in id order");
  }
  // The generator as generate()'s Sampler seeds it: the same seed, the same draws.
  records_.push_back({std::move(prompt), {}, sampling, Xoshiro256(seed)});
}

void ServingExecutor::release(int64_t id) {
  swap_space_.forget(id);  // a request ended while swapped out
  Record& record = at(static_cast<size_t>(id));
  record.released = true;
  record.prompt = {};
  record.generated = {};
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
    SequenceChunk chunk;
    chunk.cached_tokens = w.seq->computed;
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
    }
    chunk.block_table = table_of(iteration, w.seq->id);
    pass.batch.sequences.push_back(std::move(chunk));
    pass.samples.push_back(w.decode || w.seq->computed + w.new_tokens >= w.seq->target);
  }
  return pass;
}

std::vector<std::vector<int32_t>> ServingExecutor::run_sampled(const ScheduledIteration& iteration,
                                                               const PlannedPass& pass) {
  std::vector<SampleSpec> specs(pass.batch.sequences.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto request = static_cast<size_t>(iteration.work[i].seq->id);
    specs[i].params = at(request).sampling;
    // A draw only where a token is kept, so a request's draws do not depend on its chunking.
    if (pass.samples[i] && sampling_draws(specs[i].params))
      specs[i].uniform = at(request).rng.uniform();
  }
  const std::vector<int32_t> ids = backend_.forward_sample(pass.batch, specs);
  std::vector<std::vector<int32_t>> emitted(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) emitted[i] = {ids[i]};
  return emitted;
}

std::vector<std::vector<int32_t>> ServingExecutor::run_verified(const ScheduledIteration& iteration,
                                                                const PlannedPass& pass) {
  const ForwardResult result = backend_.forward(pass.batch);
  std::vector<std::vector<int32_t>> emitted(iteration.work.size());
  for (size_t i = 0; i < iteration.work.size(); ++i) {
    const auto request = static_cast<size_t>(iteration.work[i].seq->id);
    const SamplingParams& params = at(request).sampling;
    if (pass.drafts[i].empty()) {
      emitted[i] = {
          pass.samples[i] && sampling_draws(params)
              ? pick_token(sampling_distribution(result.last(i), params), at(request).rng.uniform())
              : argmax(result.last(i))};
      continue;
    }
    std::vector<std::span<const float>> rows;
    for (int64_t r = 0; r < result.rows(i); ++r)
      rows.push_back(result.row(result.first_row[i] + r));
    // The draft model's distributions for sampling requests; none for n-gram drafts (a point
    // mass) or greedy requests.
    const std::span<const BatchDrafter::Distribution> qs =
        drafter_ ? std::span<const BatchDrafter::Distribution>(pass.proposals.distributions[i])
                 : std::span<const BatchDrafter::Distribution>();
    emitted[i] = verify_draft(rows, pass.drafts[i], qs, params, at(request).rng).tokens;
  }
  return emitted;
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
  // Without drafts, the fast path: sampled where the logits are.
  const std::vector<std::vector<int32_t>> emitted =
      pass.speculating ? run_verified(iteration, pass) : run_sampled(iteration, pass);
  // The draft model's passes are part of the iteration, on the wall clock and on the device.
  outcome.duration_s =
      swap_s + pass.proposals.wall_s +
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The CPU backend measures no device time (negative): all of it is the host's.
  const double device_s = backend_.last_forward_device_s();
  outcome.device_s = device_s >= 0.0 ? swap_s + device_s + std::max(pass.proposals.device_s, 0.0)
                                     : outcome.duration_s;
  if (profile_kernels_) record_kernels(iteration);
  ++forward_passes_;
  for (size_t i = 0; i < iteration.work.size(); ++i) {
    const Work& w = iteration.work[i];
    // A sequence that emits its last token does so here; one whose output is complete never
    // samples again, so every sampled token is one the scheduler emits.
    auto& out = at(static_cast<size_t>(w.seq->id)).generated;
    if (pass.samples[i]) out.insert(out.end(), emitted[i].begin(), emitted[i].end());
    outcome.advance.push_back(w.decode ? static_cast<int64_t>(emitted[i].size()) : w.new_tokens);
  }
  return outcome;
}

}  // namespace inferlab::engine
