#include "server/openai_response.hpp"

namespace inferlab::server {

namespace {
bool is_chat(const ResponseHeader& h) {
  return h.endpoint == Endpoint::chat_completions;
}

ResponseJson header_json(const ResponseHeader& h, bool chunk) {
  const char* object =
      is_chat(h) ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return {{"id", h.id}, {"object", object}, {"created", h.created_unix_s}, {"model", h.model}};
}

ResponseJson reason_json(const std::string& reason) {
  return reason.empty() ? ResponseJson(nullptr) : ResponseJson(reason);
}
}  // namespace

ResponseJson usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

ResponseJson completion_json(const ResponseHeader& h, const std::vector<ChoiceJson>& choices,
                             int64_t prompt_tokens, int64_t completion_tokens) {
  ResponseJson out = header_json(h, false);
  out["choices"] = ResponseJson::array();
  for (const ChoiceJson& c : choices) {
    ResponseJson choice = {{"index", c.index}};
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

ResponseJson chunk_json(const ResponseHeader& h, const ChoiceJson& c, bool first) {
  ResponseJson out = header_json(h, true);
  ResponseJson choice = {{"index", c.index}};
  if (is_chat(h)) {
    ResponseJson delta = ResponseJson::object();
    if (first) delta["role"] = "assistant";
    if (!c.text.empty() || (first && c.finish_reason.empty())) delta["content"] = c.text;
    choice["delta"] = delta;
  } else {
    choice["text"] = c.text;
  }
  choice["logprobs"] = c.logprobs;
  choice["finish_reason"] = reason_json(c.finish_reason);
  out["choices"] = ResponseJson::array({choice});
  return out;
}

ResponseJson usage_chunk_json(const ResponseHeader& h, int64_t prompt_tokens,
                              int64_t completion_tokens) {
  ResponseJson out = header_json(h, true);
  out["choices"] = ResponseJson::array();
  out["usage"] = usage_json(prompt_tokens, completion_tokens);
  return out;
}

std::string dump_json(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string dump_json(const ResponseJson& value) {
  return value.dump(-1, ' ', false, ResponseJson::error_handler_t::replace);
}

}  // namespace inferlab::server
