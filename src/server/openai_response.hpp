#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

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
// The whole answer of a request that did not stream.
nlohmann::json completion_json(const ResponseHeader& header, const std::string& text,
                               const std::string& finish_reason, int64_t prompt_tokens,
                               int64_t completion_tokens);
// One streamed chunk: a text delta (chat: the first carries the role), or with a finish reason
// the last one.
nlohmann::json chunk_json(const ResponseHeader& header, const std::string& text,
                          const std::string& finish_reason, bool first);
// The usage chunk of stream_options.include_usage: no choices, the token counts.
nlohmann::json usage_chunk_json(const ResponseHeader& header, int64_t prompt_tokens,
                                int64_t completion_tokens);
// JSON text that never throws on invalid UTF-8 (replaced by U+FFFD).
std::string dump_json(const nlohmann::json& value);

}  // namespace inferlab::server
