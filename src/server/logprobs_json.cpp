#include "server/logprobs_json.hpp"

#include <fmt/format.h>

#include "engine/tokenizer/utf8.hpp"

namespace inferlab::server {

namespace {

// Characters (code points) in valid UTF-8 text: the bytes that are not continuation bytes.
int64_t code_points(const std::string& text) {
  int64_t count = 0;
  for (char c : text) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return count;
}

ResponseJson top_dict(const engine::Tokenizer& tokenizer,
                      const engine::PositionLogprobs& logprobs) {
  ResponseJson top = ResponseJson::object();
  for (const auto& t : logprobs.top) {
    top[logprob_token_text(tokenizer, t.token)] = json_logprob(t.logprob);
  }
  return top;
}

ResponseJson bytes_json(const std::string& bytes) {
  ResponseJson out = ResponseJson::array();
  for (char c : bytes) out.push_back(static_cast<unsigned char>(c));
  return out;
}

}  // namespace

std::string logprob_token_text(const engine::Tokenizer& tokenizer, int32_t id) {
  const std::string& bytes = tokenizer.token_bytes(id);
  if (engine::is_valid_utf8(bytes)) return bytes;
  std::string out = "bytes:";
  for (char c : bytes) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
  return out;
}

double json_logprob(float logprob) {
  return logprob < -9999.0f ? -9999.0 : static_cast<double>(logprob);
}

std::string echo_text(const engine::Tokenizer& tokenizer, std::span<const int32_t> prompt) {
  return engine::utf8_lossy(tokenizer.decode(prompt, /*skip_special_tokens=*/true));
}

CompletionLogprobs::CompletionLogprobs(const engine::Tokenizer& tokenizer)
    : tokenizer_(tokenizer),
      decoder_(tokenizer, /*skip_special_tokens=*/true),
      tokens_(ResponseJson::array()),
      token_logprobs_(ResponseJson::array()),
      top_logprobs_(ResponseJson::array()),
      text_offset_(ResponseJson::array()) {}

int64_t CompletionLogprobs::advance(int32_t token) {
  const int64_t offset = chars_;
  chars_ += code_points(decoder_.push(token));
  return offset;
}

void CompletionLogprobs::add_prompt(std::span<const int32_t> prompt,
                                    const std::vector<engine::PositionLogprobs>& scored) {
  for (size_t p = 0; p < prompt.size(); ++p) {
    tokens_.push_back(logprob_token_text(tokenizer_, prompt[p]));
    text_offset_.push_back(advance(prompt[p]));
    if (p == 0 || p - 1 >= scored.size()) {
      token_logprobs_.push_back(nullptr);
      top_logprobs_.push_back(nullptr);
      continue;
    }
    token_logprobs_.push_back(json_logprob(scored[p - 1].chosen.logprob));
    top_logprobs_.push_back(top_dict(tokenizer_, scored[p - 1]));
  }
  // The echoed text ends here (echo_text's lossy end); the generated text starts afresh.
  chars_ += code_points(decoder_.finish());
}

void CompletionLogprobs::add(int32_t token, const engine::PositionLogprobs& logprobs) {
  tokens_.push_back(logprob_token_text(tokenizer_, token));
  text_offset_.push_back(advance(token));
  token_logprobs_.push_back(json_logprob(logprobs.chosen.logprob));
  top_logprobs_.push_back(top_dict(tokenizer_, logprobs));
}

ResponseJson CompletionLogprobs::take() {
  ResponseJson out = {{"tokens", std::move(tokens_)},
                      {"token_logprobs", std::move(token_logprobs_)},
                      {"top_logprobs", std::move(top_logprobs_)},
                      {"text_offset", std::move(text_offset_)}};
  tokens_ = ResponseJson::array();
  token_logprobs_ = ResponseJson::array();
  top_logprobs_ = ResponseJson::array();
  text_offset_ = ResponseJson::array();
  return out;
}

ResponseJson chat_logprob_json(const engine::Tokenizer& tokenizer,
                               const engine::PositionLogprobs& logprobs) {
  const auto entry = [&](const engine::TokenLogprob& t) {
    return ResponseJson{{"token", logprob_token_text(tokenizer, t.token)},
                        {"logprob", json_logprob(t.logprob)},
                        {"bytes", bytes_json(tokenizer.token_bytes(t.token))}};
  };
  ResponseJson out = entry(logprobs.chosen);
  ResponseJson top = ResponseJson::array();
  for (const auto& t : logprobs.top) top.push_back(entry(t));
  out["top_logprobs"] = std::move(top);
  return out;
}

}  // namespace inferlab::server
