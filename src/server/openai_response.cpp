#include "server/openai_response.hpp"

namespace inferlab::server {

using nlohmann::json;

namespace {
bool is_chat(const ResponseHeader& h) {
  return h.endpoint == Endpoint::chat_completions;
}

json header_json(const ResponseHeader& h, bool chunk) {
  const char* object =
      is_chat(h) ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return {{"id", h.id}, {"object", object}, {"created", h.created_unix_s}, {"model", h.model}};
}

json reason_json(const std::string& reason) {
  return reason.empty() ? json(nullptr) : json(reason);
}
}  // namespace

json usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

json completion_json(const ResponseHeader& h, const std::string& text,
                     const std::string& finish_reason, int64_t prompt_tokens,
                     int64_t completion_tokens) {
  json out = header_json(h, false);
  json choice = {{"index", 0}, {"finish_reason", reason_json(finish_reason)}};
  if (is_chat(h)) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
    choice["logprobs"] = nullptr;
  }
  out["choices"] = json::array({choice});
  out["usage"] = usage_json(prompt_tokens, completion_tokens);
  return out;
}

json chunk_json(const ResponseHeader& h, const std::string& text, const std::string& finish_reason,
                bool first) {
  json out = header_json(h, true);
  json choice = {{"index", 0}, {"finish_reason", reason_json(finish_reason)}};
  if (is_chat(h)) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || (first && finish_reason.empty())) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
    choice["logprobs"] = nullptr;
  }
  out["choices"] = json::array({choice});
  return out;
}

json usage_chunk_json(const ResponseHeader& h, int64_t prompt_tokens, int64_t completion_tokens) {
  json out = header_json(h, true);
  out["choices"] = json::array();
  out["usage"] = usage_json(prompt_tokens, completion_tokens);
  return out;
}

std::string dump_json(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace inferlab::server
