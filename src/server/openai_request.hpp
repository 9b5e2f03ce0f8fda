#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/chat.hpp"

namespace inferlab::server {

enum class Endpoint { completions, chat_completions };

// Limits on what a request may ask for (before any tokenization or allocation it would cause).
inline constexpr size_t kMaxStopStrings = 4;
inline constexpr size_t kMaxStopStringBytes = 256;
inline constexpr size_t kMaxMessages = 1024;
inline constexpr size_t kMaxStopTokenIds = 1024;
inline constexpr size_t kMaxPrompts = 1024;       // prompts of one /v1/completions request
inline constexpr size_t kMaxPromptIds = 1 << 24;  // token ids over all its prompts
inline constexpr int64_t kMaxChoices = 128;       // n (OpenAI's limit)

// One prompt of /v1/completions: a string, or token ids.
struct PromptInput {
  std::optional<std::string> text;
  std::vector<int32_t> ids;  // when text is absent
};

// A /v1/completions or /v1/chat/completions body, its fields checked for type and range.
// Fields the server cannot honour (best_of, tools, penalties other than 0, ...) are refused
// rather than ignored, so a client never gets silently different output.
//
// Logprobs: /v1/completions takes `logprobs: k` (0..20: the sampled token's logprob and the k
// most likely) and `echo` (the prompt's tokens and their logprobs before the completion's);
// `max_tokens: 0` is allowed only with echo (the prompt scored, nothing generated; vLLM refuses
// it without echo too). /v1/chat/completions takes `logprobs: true` with `top_logprobs: k`.
struct CompletionRequest {
  Endpoint endpoint = Endpoint::completions;
  std::string model;
  std::vector<PromptInput> prompts;           // completions: one, or several (a batch)
  std::vector<engine::ChatMessage> messages;  // chat
  std::optional<int64_t> max_tokens;          // absent: the endpoint's default; 0: echo only
  int64_t n = 1;                              // choices per prompt
  bool echo = false;                          // completions: the prompt before the completion
  std::optional<int> logprobs;                // top logprobs per token; absent: no logprobs
  int64_t min_tokens = 0;                     // stop tokens are ignored before this many
  double temperature = 1.0, top_p = 1.0;      // OpenAI's defaults
  int64_t top_k = 0;                          // 0 or -1: no limit
  std::optional<uint64_t> seed;
  bool stream = false, include_usage = false;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
};

// Parses and checks a request body; ApiError(400) naming the field for anything malformed.
CompletionRequest parse_completion_request(std::string_view body, Endpoint endpoint);

}  // namespace inferlab::server
