#include "server/openai_request.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "engine/logprobs.hpp"
#include "server/api_error.hpp"

namespace inferlab::server {

namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw ApiError(400, message, param);
}

// An integer that fits int64 (JSON numbers like 5.0 are accepted, 5.5 is not).
int64_t integer_field(const json& value, const std::string& name, int64_t min, int64_t max) {
  int64_t result = 0;
  if (value.is_number_integer()) {
    if (value.is_number_unsigned() &&
        value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      bad(name, fmt::format("'{}' must be at most {}", name, max));
    }
    result = value.get<int64_t>();
  } else if (value.is_number_float()) {
    const double d = value.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e15) {
      bad(name, fmt::format("'{}' must be an integer", name));
    }
    result = static_cast<int64_t>(d);
  } else {
    bad(name, fmt::format("'{}' must be an integer", name));
  }
  if (result < min || result > max) {
    bad(name, fmt::format("'{}' must be between {} and {}, not {}", name, min, max, result));
  }
  return result;
}

double number_field(const json& value, const std::string& name, double min, double max) {
  if (!value.is_number()) bad(name, fmt::format("'{}' must be a number", name));
  const double d = value.get<double>();
  if (!std::isfinite(d) || d < min || d > max) {
    bad(name, fmt::format("'{}' must be between {} and {}", name, min, max));
  }
  return d;
}

bool bool_field(const json& value, const std::string& name) {
  if (!value.is_boolean()) bad(name, fmt::format("'{}' must be true or false", name));
  return value.get<bool>();
}

std::string string_field(const json& value, const std::string& name) {
  if (!value.is_string()) bad(name, fmt::format("'{}' must be a string", name));
  return value.get<std::string>();
}

std::vector<int32_t> token_ids(const json& value, const std::string& name, size_t max_count) {
  if (value.size() > max_count)
    bad(name, fmt::format("'{}' has more than {} ids", name, max_count));
  std::vector<int32_t> ids;
  ids.reserve(value.size());
  for (const auto& id : value) {
    ids.push_back(
        static_cast<int32_t>(integer_field(id, name, 0, std::numeric_limits<int32_t>::max())));
  }
  return ids;
}

PromptInput one_prompt(const json& prompt, size_t& ids_left) {
  PromptInput out;
  if (prompt.is_string()) {
    out.text = prompt.get<std::string>();
    if (out.text->empty()) bad("prompt", "'prompt' is empty");
  } else if (prompt.is_array() && !prompt.empty() && prompt[0].is_number()) {
    // A token-id prompt; its length is checked against the model's context later.
    out.ids = token_ids(prompt, "prompt", ids_left);
    ids_left -= out.ids.size();
  } else {
    bad("prompt",
        "'prompt' must be a string, a non-empty array of token ids, or an array of those");
  }
  return out;
}

void parse_prompt(const json& prompt, CompletionRequest& request) {
  size_t ids_left = kMaxPromptIds;
  const bool batch = prompt.is_array() && !prompt.empty() && !prompt[0].is_number();
  if (!batch) {
    request.prompts.push_back(one_prompt(prompt, ids_left));
    return;
  }
  // Several prompts (lm-evaluation-harness batches token-id prompts so): a choice each.
  if (prompt.size() > kMaxPrompts) {
    bad("prompt", fmt::format("'prompt' has more than {} prompts", kMaxPrompts));
  }
  for (const auto& p : prompt) {
    if (!p.is_string() && !p.is_array()) {
      bad("prompt", "each of several prompts must be a string or an array of token ids");
    }
    request.prompts.push_back(one_prompt(p, ids_left));
  }
}

std::string message_content(const json& content, const std::string& name) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array())
    bad(name, fmt::format("'{}' must be a string or an array of parts", name));
  std::string text;
  for (const auto& part : content) {
    if (!part.is_object() || part.value("type", json()) != "text" || !part.contains("text") ||
        !part["text"].is_string()) {
      bad(name, fmt::format("'{}' parts must be {{\"type\": \"text\", \"text\": ...}}", name));
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

void parse_messages(const json& messages, CompletionRequest& request) {
  if (!messages.is_array() || messages.empty()) {
    bad("messages", "'messages' must be a non-empty array");
  }
  if (messages.size() > kMaxMessages) {
    bad("messages", fmt::format("'messages' has more than {} entries", kMaxMessages));
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    const std::string where = fmt::format("messages[{}]", i);
    if (!m.is_object()) bad(where, fmt::format("'{}' must be an object", where));
    const std::string role = string_field(m.value("role", json()), where + ".role");
    if (role != "system" && role != "user" && role != "assistant") {
      bad(where + ".role",
          fmt::format("'{}.role' must be system, user or assistant, not '{}'", where, role));
    }
    if (!m.contains("content")) bad(where + ".content", fmt::format("'{}' has no content", where));
    request.messages.push_back({role, message_content(m["content"], where + ".content")});
  }
}

void parse_stop(const json& stop, CompletionRequest& request) {
  if (stop.is_null()) return;
  std::vector<std::string> strings;
  if (stop.is_string()) {
    strings.push_back(stop.get<std::string>());
  } else if (stop.is_array()) {
    if (stop.size() > kMaxStopStrings) {
      bad("stop", fmt::format("'stop' takes at most {} strings", kMaxStopStrings));
    }
    for (const auto& s : stop) strings.push_back(string_field(s, "stop"));
  } else {
    bad("stop", "'stop' must be a string or an array of strings");
  }
  for (const auto& s : strings) {
    if (s.empty() || s.size() > kMaxStopStringBytes) {
      bad("stop", fmt::format("each 'stop' string must have 1 to {} bytes", kMaxStopStringBytes));
    }
  }
  request.stop = std::move(strings);
}

// Fields that change the output in ways this server does not implement: refused unless they
// hold their neutral value.
void refuse_unsupported(const json& body) {
  const auto present = [&](const char* name) {
    return body.contains(name) && !body[name].is_null();
  };
  if (present("best_of") && !(body["best_of"].is_number_integer() &&
                              body["best_of"] == (present("n") ? body["n"] : json(1)))) {
    bad("best_of", "'best_of' other than n is not supported");
  }
  for (const char* name :
       {"suffix", "tools", "functions", "logit_bias", "response_format", "prompt_logprobs"}) {
    if (present(name)) bad(name, fmt::format("'{}' is not supported", name));
  }
  for (const char* name : {"presence_penalty", "frequency_penalty"}) {
    if (present(name) && number_field(body[name], name, -2.0, 2.0) != 0.0) {
      bad(name, fmt::format("'{}' other than 0 is not supported", name));
    }
  }
  if (present("repetition_penalty") &&
      number_field(body["repetition_penalty"], "repetition_penalty", 0.0, 10.0) != 1.0) {
    bad("repetition_penalty", "'repetition_penalty' other than 1 is not supported");
  }
}

// The endpoint's logprobs fields (see CompletionRequest).
void parse_logprobs(const json& body, CompletionRequest& request) {
  const auto get = [&](const char* name) -> const json* {
    auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
  };
  const json* logprobs = get("logprobs");
  const json* top = get("top_logprobs");
  const json* echo = get("echo");
  if (request.endpoint == Endpoint::completions) {
    if (top != nullptr) {
      bad("top_logprobs", "'top_logprobs' is a chat field; /v1/completions takes 'logprobs': k");
    }
    if (echo != nullptr) request.echo = bool_field(*echo, "echo");
    // false: none (a client's explicit default).
    if (logprobs != nullptr && !(logprobs->is_boolean() && !logprobs->get<bool>())) {
      if (logprobs->is_boolean()) {
        bad("logprobs", "'logprobs' on /v1/completions is an integer (top logprobs per token)");
      }
      request.logprobs =
          static_cast<int>(integer_field(*logprobs, "logprobs", 0, engine::kMaxTopLogprobs));
    }
    return;
  }
  if (echo != nullptr && bool_field(*echo, "echo")) {
    bad("echo", "'echo' is not supported on /v1/chat/completions");
  }
  const bool wanted = logprobs != nullptr && bool_field(*logprobs, "logprobs");
  const int k =
      top ? static_cast<int>(integer_field(*top, "top_logprobs", 0, engine::kMaxTopLogprobs)) : 0;
  if (k > 0 && !wanted) {
    bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  }
  if (wanted) request.logprobs = k;
}

}  // namespace

CompletionRequest parse_completion_request(std::string_view body_text, Endpoint endpoint) {
  json body = json::parse(body_text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) throw ApiError(400, "the request body is not valid JSON");
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
  CompletionRequest request;
  request.endpoint = endpoint;
  if (!body.contains("model")) bad("model", "'model' is required");
  request.model = string_field(body["model"], "model");
  if (endpoint == Endpoint::completions) {
    if (!body.contains("prompt")) bad("prompt", "'prompt' is required");
    parse_prompt(body["prompt"], request);
  } else {
    if (!body.contains("messages")) bad("messages", "'messages' is required");
    parse_messages(body["messages"], request);
  }
  refuse_unsupported(body);
  const auto get = [&](const char* name) -> const json* {
    auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
  };
  parse_logprobs(body, request);
  if (const json* v = get("n")) request.n = integer_field(*v, "n", 1, kMaxChoices);
  constexpr int64_t kMaxTokens = int64_t{1} << 30;
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    if (const json* v = get(name)) request.max_tokens = integer_field(*v, name, 0, kMaxTokens);
  }
  if (request.max_tokens == 0 && !request.echo) {
    bad("max_tokens",
        "'max_tokens' must be between 1 and 1073741824, or 0 with 'echo': true (the prompt "
        "scored, nothing generated)");
  }
  if (const json* v = get("min_tokens"))
    request.min_tokens = integer_field(*v, "min_tokens", 0, kMaxTokens);
  if (request.max_tokens && request.min_tokens > *request.max_tokens) {
    bad("min_tokens", "'min_tokens' must not exceed 'max_tokens'");
  }
  if (const json* v = get("temperature"))
    request.temperature = number_field(*v, "temperature", 0.0, 2.0);
  if (const json* v = get("top_p")) {
    request.top_p = number_field(*v, "top_p", 0.0, 1.0);
    if (request.top_p <= 0.0) bad("top_p", "'top_p' must be in (0, 1]");
  }
  if (const json* v = get("top_k")) {
    request.top_k = integer_field(*v, "top_k", -1, std::numeric_limits<int32_t>::max());
    if (request.top_k < 0) request.top_k = 0;
  }
  if (const json* v = get("seed")) {
    request.seed = static_cast<uint64_t>(integer_field(
        *v, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()));
  }
  if (const json* v = get("stream")) request.stream = bool_field(*v, "stream");
  if (const json* v = get("stream_options")) {
    if (!v->is_object()) bad("stream_options", "'stream_options' must be an object");
    if (!request.stream) bad("stream_options", "'stream_options' needs 'stream': true");
    if (v->contains("include_usage")) {
      request.include_usage = bool_field((*v)["include_usage"], "stream_options.include_usage");
    }
  }
  if (body.contains("stop")) parse_stop(body["stop"], request);
  if (const json* v = get("stop_token_ids")) {
    if (!v->is_array()) bad("stop_token_ids", "'stop_token_ids' must be an array of token ids");
    request.stop_token_ids = token_ids(*v, "stop_token_ids", kMaxStopTokenIds);
  }
  if (const json* v = get("ignore_eos")) request.ignore_eos = bool_field(*v, "ignore_eos");
  return request;
}

}  // namespace inferlab::server
