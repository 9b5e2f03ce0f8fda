#pragma once
#include <cstdint>
#include <string>

#include "engine/tokenizer/tokenizer.hpp"

namespace inferlab::engine {

// Decodes ids one at a time for printing as they are generated: push() returns the text
// that is complete so far, holding back the bytes at the end that begin a UTF-8 sequence the
// next tokens may finish (a character split across tokens, common for CJK and emoji).
// Bytes that can never become valid UTF-8 come out as U+FFFD, so every piece is valid UTF-8;
// the concatenated pieces equal utf8_lossy(tokenizer.decode(ids)).
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false)
      : tokenizer_(tokenizer), skip_special_(skip_special_tokens) {}

  // InputError for an id outside the vocabulary (nothing is consumed then).
  std::string push(int32_t id);
  // The held-back bytes (an unfinished sequence, as U+FFFD); call at the end of generation.
  std::string finish();
  // Bytes held back now (0-3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::string pending_;
};

}  // namespace inferlab::engine
