#include "engine/generate.hpp"

#include <algorithm>
#include <chrono>

#include "util/error.hpp"

namespace inferlab::engine {

GenerateResult generate(Backend& backend, std::span<const int32_t> prompt,
                        const GenerateOptions& options,
                        const std::function<void(int32_t)>& on_token) {
  using Clock = std::chrono::steady_clock;
  const auto& layout = backend.kv_layout();
  const int64_t prompt_tokens = static_cast<int64_t>(prompt.size());
  // The last generated token is never fed back, so the cache needs prompt + max_new - 1 slots.
  check_generation_fits(backend, prompt_tokens, options,
                        prompt_tokens + options.max_new_tokens - 1);

  GenerateResult result;
  Sampler sampler(options.seed);
  BlockAllocator allocator(layout.num_blocks);
  ForwardBatch batch;
  batch.sequences.resize(1);
  SequenceChunk& chunk = batch.sequences[0];

  const auto start = Clock::now();
  auto first_token_time = start;
  const std::span<const int32_t> last_chunk = prefill_leading_chunks(
      backend, allocator, chunk.block_table, prompt, options.prefill_chunk_tokens);
  chunk.tokens.assign(last_chunk.begin(), last_chunk.end());
  chunk.cached_tokens = prompt_tokens - static_cast<int64_t>(last_chunk.size());
  while (true) {
    allocator.grow(chunk.block_table,
                   chunk.cached_tokens + static_cast<int64_t>(chunk.tokens.size()),
                   layout.block_size);
    const SampleSpec spec{options.sampling, sampler.draw(options.sampling)};
    const int32_t token = backend.forward_sample(batch, std::span<const SampleSpec>(&spec, 1))[0];
    result.tokens.push_back(token);
    if (result.tokens.size() == 1) first_token_time = Clock::now();
    if (on_token) on_token(token);
    result.finish_reason = finish_reason_after(result, token, options);
    if (!result.finish_reason.empty()) break;
    chunk.cached_tokens += static_cast<int64_t>(chunk.tokens.size());
    chunk.tokens.assign(1, token);
  }
  allocator.release(chunk.block_table);
  set_generate_timing(result, start, first_token_time, Clock::now());
  return result;
}

std::span<const int32_t> prefill_leading_chunks(Backend& backend, BlockAllocator& allocator,
                                                BlockTable& table, std::span<const int32_t> prompt,
                                                int64_t chunk_tokens) {
  if (chunk_tokens < 0) throw InputError("the prefill chunk must not be negative");
  const auto total = static_cast<int64_t>(prompt.size());
  if (chunk_tokens == 0 || total <= chunk_tokens) return prompt;
  // The last chunk holds the remainder (1 to chunk_tokens tokens); the ones before are full.
  const int64_t last_size = total - (total - 1) / chunk_tokens * chunk_tokens;
  ForwardBatch batch;
  batch.sequences.resize(1);
  SequenceChunk& chunk = batch.sequences[0];
  for (int64_t first = 0; first < total - last_size; first += chunk_tokens) {
    const auto piece =
        prompt.subspan(static_cast<size_t>(first), static_cast<size_t>(chunk_tokens));
    if (!allocator.grow(table, first + chunk_tokens, backend.kv_layout().block_size)) {
      throw InputError("the KV cache ran out of blocks during the prefill");
    }
    chunk.tokens.assign(piece.begin(), piece.end());
    chunk.cached_tokens = first;
    chunk.block_table = table;
    backend.forward(batch);  // its KV is what counts; the last token's logits are dropped
  }
  return prompt.subspan(static_cast<size_t>(total - last_size));
}

void check_generation_fits(const Backend& backend, int64_t prompt_tokens,
                           const GenerateOptions& options, int64_t slots) {
  const auto& layout = backend.kv_layout();
  const int64_t context = backend.config().model.max_position_embeddings;
  if (prompt_tokens == 0) throw InputError("the prompt has no tokens");
  if (options.max_new_tokens < 1) throw InputError("max new tokens must be at least 1");
  if (context > 0 && prompt_tokens + options.max_new_tokens > context) {
    throw InputError("the prompt (" + std::to_string(prompt_tokens) + " tokens) plus " +
                     std::to_string(options.max_new_tokens) +
                     " new tokens is longer than the model's context of " +
                     std::to_string(context) + " tokens; shorten the prompt or --max-tokens");
  }
  if (layout.blocks_for(slots) > layout.num_blocks) {
    throw InputError("the prompt (" + std::to_string(prompt_tokens) + " tokens) plus " +
                     std::to_string(options.max_new_tokens) + " new tokens needs " +
                     std::to_string(layout.blocks_for(slots)) + " KV blocks; the cache holds " +
                     std::to_string(layout.num_blocks) + " of " +
                     std::to_string(layout.block_size) + " tokens");
  }
}

std::string finish_reason_after(const GenerateResult& result, int32_t token,
                                const GenerateOptions& options) {
  if (std::find(options.stop_token_ids.begin(), options.stop_token_ids.end(), token) !=
      options.stop_token_ids.end()) {
    return "stop";
  }
  if (static_cast<int64_t>(result.tokens.size()) >= options.max_new_tokens) return "length";
  return "";
}

void set_generate_timing(GenerateResult& result, std::chrono::steady_clock::time_point start,
                         std::chrono::steady_clock::time_point first_token,
                         std::chrono::steady_clock::time_point end) {
  result.ttft_s = std::chrono::duration<double>(first_token - start).count();
  result.e2e_s = std::chrono::duration<double>(end - start).count();
  result.tpot_s = result.tokens.size() > 1
                      ? std::chrono::duration<double>(end - first_token).count() /
                            static_cast<double>(result.tokens.size() - 1)
                      : 0.0;
}

}  // namespace inferlab::engine
