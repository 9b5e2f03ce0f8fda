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

// A /v1/completions or /v1/chat/completions body, its fields checked for type and range.
// Fields the server cannot honour (n > 1, logprobs, echo, tools, penalties other than 0, ...)
// are refused rather than ignored, so a client never gets silently different output.
struct CompletionRequest {
  Endpoint endpoint = Endpoint::completions;
  std::string model;
  std::optional<std::string> prompt_text;     // completions: a string prompt
  std::vector<int32_t> prompt_ids;            // completions: a token-id prompt
  std::vector<engine::ChatMessage> messages;  // chat
  std::optional<int64_t> max_tokens;          // absent: the endpoint's default
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
