#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/backend.hpp"
#include "engine/sampling.hpp"

namespace inferlab::engine {

struct GenerateOptions {
  int64_t max_new_tokens = 64;
  SamplingParams sampling;
  uint64_t seed = 0;
  std::vector<int64_t> stop_token_ids;  // e.g. config.eos_token_ids; the stop token is kept
  // Prompt tokens per prefill pass (chunked prefill, as vLLM's max_num_batched_tokens bounds
  // it): a long prompt runs in passes of at most this many, so the backend's buffers need not
  // hold it whole. 0: the whole prompt in one pass.
  int64_t prefill_chunk_tokens = 0;
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // new tokens only
  std::string finish_reason;    // "stop" or "length"
  double ttft_s = 0;            // prompt in → first token out
  double tpot_s = 0;            // mean time per later token (0 with one token)
  double e2e_s = 0;
};

// The checks before a sequence runs: a prompt, at least one new token, prompt + new tokens
// within the model's context, and `slots` KV positions within the backend's cache; each an
// InputError that says the sizes.
void check_generation_fits(const Backend& backend, int64_t prompt_tokens,
                           const GenerateOptions& options, int64_t slots);

// After `token` was appended to result.tokens: "stop" when it is a stop token, "length" when
// max_new_tokens are out, else empty (the sequence goes on).
std::string finish_reason_after(const GenerateResult& result, int32_t token,
                                const GenerateOptions& options);

// Fills ttft_s, e2e_s and tpot_s (the mean over tokens after the first) from the run's start,
// its first token and its end.
void set_generate_timing(GenerateResult& result, std::chrono::steady_clock::time_point start,
                         std::chrono::steady_clock::time_point first_token,
                         std::chrono::steady_clock::time_point end);

// Runs all of `prompt` but its last chunk through `backend`, in passes of at most `chunk_tokens`
// tokens (0: none), growing `table` from `allocator` (InputError when the pool runs out); returns
// the last chunk, which the caller runs with `cached_tokens` = prompt size − its size to get the
// first token. The tokens equal one pass over the whole prompt's (causal attention).
std::span<const int32_t> prefill_leading_chunks(Backend& backend, BlockAllocator& allocator,
                                                BlockTable& table, std::span<const int32_t> prompt,
                                                int64_t chunk_tokens);

// Runs one sequence: prefill of the prompt (in chunks of options.prefill_chunk_tokens), then
// decode steps, each sampling from the last
// token's logits; on_token sees each token as it is chosen (for streaming). Blocks come from a
// BlockAllocator over the backend's pool and go back at the end. An empty prompt, a prompt plus
// max_new_tokens past the model's context (max_position_embeddings) or past the KV cache are
// InputErrors that say the sizes.
GenerateResult generate(Backend& backend, std::span<const int32_t> prompt,
                        const GenerateOptions& options,
                        const std::function<void(int32_t)>& on_token = {});

}  // namespace inferlab::engine
