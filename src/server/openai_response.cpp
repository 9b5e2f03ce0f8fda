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

json completion_json(const ResponseHeader& h, const std::vector<ChoiceJson>& choices,
                     int64_t prompt_tokens, int64_t completion_tokens) {
  json out = header_json(h, false);
  out["choices"] = json::array();
  for (const ChoiceJson& c : choices) {
    json choice = {{"index", c.index}};
    if (is_chat(h)) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
    } else {
      choice["text"] = c.text;
    }
    choice["logprobs"] = c.logprobs;
    choice["finish_reason"] = reason_json(c.finish_reason);
    out["choices"].push_back(std::move(choice));
  }
  out["usage"] = usage_json(prompt_tokens, completion_tokens);
  return out;
}

json chunk_json(const ResponseHeader& h, const ChoiceJson& c, bool first) {
  json out = header_json(h, true);
  json choice = {{"index", c.index}};
  if (is_chat(h)) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!c.text.empty() || (first && c.finish_reason.empty())) delta["content"] = c.text;
    choice["delta"] = delta;
  } else {
    choice["text"] = c.text;
  }
  choice["logprobs"] = c.logprobs;
  choice["finish_reason"] = reason_json(c.finish_reason);
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
