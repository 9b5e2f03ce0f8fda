#pragma once
// Token-level perplexity with the usual sliding window (Hugging Face's "Perplexity of
// fixed-length models"): windows of `context` tokens starting every `stride` tokens; each
// window is one teacher-forced prefill, and scores only the tokens no earlier window scored, so
// every token but the first is predicted exactly once, from at most `context` − 1 tokens before
// it within its window. Perplexity = exp(mean negative log-likelihood), natural log.
#include <cstdint>
#include <span>

#include "engine/backend.hpp"

namespace inferlab::engine {

struct PerplexityResult {
  double perplexity = 0;
  double nll_mean = 0;  // nats per scored token
  int64_t tokens = 0;   // tokens scored: the sequence's length − 1
  int64_t windows = 0;
};

// `ids` at least 2 tokens; 2 ≤ context ≤ the backend's pool and batch; 1 ≤ stride ≤ context.
// The log-softmax is taken in double over the backend's fp32 logits.
PerplexityResult perplexity(Backend& backend, std::span<const int32_t> ids, int64_t context,
                            int64_t stride);

}  // namespace inferlab::engine
