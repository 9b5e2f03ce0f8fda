#pragma once
// Logprobs in the OpenAI API's two formats, from the engine's (engine/logprobs.hpp).
//
// A token's text is the bytes it decodes to alone (special tokens as their text, e.g.
// "<|eot_id|>") when they are valid UTF-8; a byte-level token that holds part of a character
// is written as OpenAI writes it, "bytes:" and each byte as \xNN (e.g. "bytes:\xe6\x97"), and
// the chat format's `bytes` field carries the raw bytes.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "engine/logprobs.hpp"
#include "engine/tokenizer/stream_decoder.hpp"
#include "engine/tokenizer/tokenizer.hpp"
#include "server/openai_response.hpp"

namespace inferlab::server {

std::string logprob_token_text(const engine::Tokenizer& tokenizer, int32_t id);

// A logprob as JSON: -inf (and anything below) as -9999.0, as vLLM and OpenAI write it.
double json_logprob(float logprob);

// The text a prompt is echoed as: its tokens decoded, special tokens skipped (as generated text
// is), ill-formed UTF-8 replaced.
std::string echo_text(const engine::Tokenizer& tokenizer, std::span<const int32_t> prompt);

// /v1/completions' logprobs object, {tokens, token_logprobs, top_logprobs, text_offset}, built a
// token at a time and taken in pieces (a streamed chunk's, or the whole answer's). text_offset
// counts characters (Unicode code points, as vLLM's Python strings) of the choice's text before
// the token: the echoed prompt, then the generated text. A token that ends a character split
// across tokens points at that character; special tokens add no text.
class CompletionLogprobs {
 public:
  explicit CompletionLogprobs(const engine::Tokenizer& tokenizer);
  // The prompt's tokens (echo): the first with logprob and top_logprobs null, token p with
  // scored[p - 1].
  void add_prompt(std::span<const int32_t> prompt,
                  const std::vector<engine::PositionLogprobs>& scored);
  void add(int32_t token, const engine::PositionLogprobs& logprobs);
  bool empty() const { return tokens_.empty(); }
  // What was added since the last take().
  ResponseJson take();

 private:
  // The token's text offset; advances past its text.
  int64_t advance(int32_t token);

  const engine::Tokenizer& tokenizer_;
  engine::StreamDecoder decoder_;
  int64_t chars_ = 0;
  ResponseJson tokens_, token_logprobs_, top_logprobs_, text_offset_;
};

// /v1/chat/completions' entry of one token in logprobs.content:
// {token, logprob, bytes, top_logprobs: [{token, logprob, bytes}, ...]}.
ResponseJson chat_logprob_json(const engine::Tokenizer& tokenizer,
                               const engine::PositionLogprobs& logprobs);

}  // namespace inferlab::server
