#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/openai_request.hpp"

namespace inferlab::server {

// The identity every object of one response carries.
struct ResponseHeader {
  std::string id;  // "cmpl-…" or "chatcmpl-…"
  long created_unix_s = 0;
  std::string model;
  Endpoint endpoint = Endpoint::completions;
};

nlohmann::json usage_json(int64_t prompt_tokens, int64_t completion_tokens);
// One choice's text (or a streamed delta of it), finish reason (empty: none yet) and logprobs
// (null where none were asked for; else the endpoint's object: logprobs_json.hpp).
struct ChoiceJson {
  int64_t index = 0;
  std::string text;
  std::string finish_reason;
  nlohmann::json logprobs;
};
// The whole answer of a request that did not stream.
nlohmann::json completion_json(const ResponseHeader& header, const std::vector<ChoiceJson>& choices,
                               int64_t prompt_tokens, int64_t completion_tokens);
// One streamed chunk of one choice: a text delta (chat: the choice's first carries the role), or
// with a finish reason its last one.
nlohmann::json chunk_json(const ResponseHeader& header, const ChoiceJson& choice, bool first);
// The usage chunk of stream_options.include_usage: no choices, the token counts.
nlohmann::json usage_chunk_json(const ResponseHeader& header, int64_t prompt_tokens,
                                int64_t completion_tokens);
// JSON text that never throws on invalid UTF-8 (replaced by U+FFFD).
std::string dump_json(const nlohmann::json& value);

}  // namespace inferlab::server
