#include "engine/serving_executor.hpp"

#include <chrono>
#include <stdexcept>

#include "engine/rng.hpp"

namespace inferlab::engine {

namespace {

std::vector<int32_t> draw_ids(uint64_t seed, uint64_t stream, int64_t count, int64_t vocab) {
  uint64_t mix = seed ^ (0x9e3779b97f4a7c15ULL * (stream + 1));
  Xoshiro256 rng(splitmix64(mix));
  std::vector<int32_t> ids(static_cast<size_t>(count));
  for (auto& id : ids) id = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(vocab));
  return ids;
}

}  // namespace

ServingExecutor::ServingExecutor(Backend& backend, const std::vector<ServeRequest>& requests,
                                 uint64_t seed)
    : backend_(backend), prompts_(requests.size()), generated_(requests.size()) {
  const int64_t vocab = backend.config().model.vocab_size;
  for (size_t i = 0; i < requests.size(); ++i) {
    const ServeRequest& r = requests[i];
    prompts_[i] = draw_ids(seed, 2 * i, r.prompt_tokens, vocab);
    if (r.prefix_id >= 0 && r.prefix_tokens > 0) {
      // Even streams for requests, odd ones for shared prefixes.
      const auto prefix = draw_ids(seed, 2 * static_cast<uint64_t>(r.prefix_id) + 1,
                                   std::min(r.prefix_tokens, r.prompt_tokens), vocab);
      std::copy(prefix.begin(), prefix.end(), prompts_[i].begin());
    }
  }
}

int32_t ServingExecutor::token_at(size_t request, int64_t position) const {
  const auto& prompt = prompts_[request];
  if (position < static_cast<int64_t>(prompt.size())) return prompt[static_cast<size_t>(position)];
  return generated_[request][static_cast<size_t>(position - static_cast<int64_t>(prompt.size()))];
}

IterationOutcome ServingExecutor::execute(const ScheduledIteration& iteration) {
  IterationOutcome outcome;
  if (iteration.work.empty()) return outcome;  // a swap-only iteration: nothing to compute
  if (iteration.swap_bytes > 0) {
    throw std::invalid_argument("the engine does not swap KV to host memory yet; use recompute");
  }
  ForwardBatch batch;
  std::vector<bool> samples;
  for (const Work& w : iteration.work) {
    if (w.decode && w.new_tokens != 1) {
      throw std::invalid_argument("the engine does not run speculative decoding yet");
    }
    const auto request = static_cast<size_t>(w.seq->id);
    SequenceChunk chunk;
    chunk.cached_tokens = w.seq->computed;
    for (int64_t p = w.seq->computed; p < w.seq->computed + w.new_tokens; ++p) {
      chunk.tokens.push_back(token_at(request, p));
    }
    for (int64_t block : iteration.blocks->blocks_of(w.seq->id)) {
      chunk.block_table.push_back(static_cast<int32_t>(block));
    }
    batch.sequences.push_back(std::move(chunk));
    samples.push_back(w.decode || w.seq->computed + w.new_tokens >= w.seq->target);
  }
  const std::vector<SampleSpec> greedy(batch.sequences.size());
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int32_t> ids = backend_.forward_sample(batch, greedy);
  outcome.duration_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++forward_passes_;
  for (size_t i = 0; i < iteration.work.size(); ++i) {
    const Work& w = iteration.work[i];
    // A sequence that emits its last token does so here; one whose output is complete never
    // samples again, so every sampled token is one the scheduler emits.
    if (samples[i]) generated_[static_cast<size_t>(w.seq->id)].push_back(ids[i]);
    outcome.advance.push_back(w.new_tokens);
  }
  return outcome;
}

}  // namespace inferlab::engine
