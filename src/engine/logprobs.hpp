#pragma once
// Log-probabilities of tokens, as the OpenAI API's `logprobs` reports them.
//
// Convention: the log-softmax of the model's raw logits (temperature 1, no top-k/top-p cut),
// whatever temperature the request samples at. This is what vLLM reports by default
// (logprobs_mode "raw_logprobs") and what OpenAI documents: a logprob describes the model's
// distribution, not the sampler's, so an evaluation harness (lm-evaluation-harness scores
// continuations with temperature 0, where the sampler's distribution would be a point mass)
// gets the same numbers at any temperature.
#include <cstdint>
#include <span>
#include <vector>

namespace inferlab::engine {

// The most top logprobs a request may ask for per position (vLLM's default max_logprobs).
inline constexpr int kMaxTopLogprobs = 20;

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0;
  bool operator==(const TokenLogprob&) const = default;
};

// One position: the logprob of the token that stands there (sampled, or the prompt's own) and
// the `top` most likely tokens, most likely first (ties: the lower id first).
struct PositionLogprobs {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;
  bool operator==(const PositionLogprobs&) const = default;
};

// What a request asks of the engine besides its tokens.
struct LogprobRequest {
  bool sampled = false;  // the generated tokens' logprobs
  bool prompt = false;   // the prompt tokens' logprobs (echo), positions 1.. of the prompt
  int top = 0;           // top logprobs per position, 0..kMaxTopLogprobs
  bool any() const { return sampled || prompt; }
};

// log(sum(exp(logits))) computed stably: the largest logit taken out before exp, the sum in
// double. NaN logits are left out (they count as probability 0); all -inf gives -inf.
double log_sum_exp(std::span<const float> logits);

// out[i] = logits[i] - log_sum_exp(logits) (fp32 results). out.size() must be logits.size().
void log_softmax(std::span<const float> logits, std::span<float> out);

// The logprob of `token` and the `top` most likely tokens of one row of logits (O(vocab)).
// Every value is logits[i] - log_sum_exp(logits) rounded to fp32 the same way, so a greedy
// token's logprob equals top[0].logprob exactly.
PositionLogprobs position_logprobs(std::span<const float> logits, int32_t token, int top);

}  // namespace inferlab::engine
