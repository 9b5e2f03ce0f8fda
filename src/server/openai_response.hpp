#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/openai_request.hpp"

namespace inferlab::server {

// An answer's JSON keeps its keys in the order they are written: choices read as OpenAI's do,
// and a top_logprobs dict lists its tokens most likely first (as OpenAI and vLLM send it).
using ResponseJson = nlohmann::ordered_json;

// The identity every object of one response carries.
struct ResponseHeader {
  std::string id;  // "cmpl-…" or "chatcmpl-…"
  long created_unix_s = 0;
  std::string model;
  Endpoint endpoint = Endpoint::completions;
};

ResponseJson usage_json(int64_t prompt_tokens, int64_t completion_tokens);
// One choice's text (or a streamed delta of it), finish reason (empty: none yet) and logprobs
// (null where none were asked for; else the endpoint's object: logprobs_json.hpp).
struct ChoiceJson {
  int64_t index = 0;
  std::string text;
  std::string finish_reason;
  ResponseJson logprobs;
};
// The whole answer of a request that did not stream.
ResponseJson completion_json(const ResponseHeader& header, const std::vector<ChoiceJson>& choices,
                             int64_t prompt_tokens, int64_t completion_tokens);
// One streamed chunk of one choice: a text delta (chat: the choice's first carries the role), or
// with a finish reason its last one.
ResponseJson chunk_json(const ResponseHeader& header, const ChoiceJson& choice, bool first);
// The usage chunk of stream_options.include_usage: no choices, the token counts.
ResponseJson usage_chunk_json(const ResponseHeader& header, int64_t prompt_tokens,
                              int64_t completion_tokens);
// JSON text that never throws on invalid UTF-8 (replaced by U+FFFD).
std::string dump_json(const nlohmann::json& value);
std::string dump_json(const ResponseJson& value);

}  // namespace inferlab::server
