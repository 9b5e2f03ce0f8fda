#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/tokenizer/stream_decoder.hpp"

namespace inferlab::server {

// A request's generated tokens as text, in pieces safe to send as they come: valid UTF-8
// (StreamDecoder), special tokens skipped (as vLLM's default), and with stop strings the text up
// to the first stop string only. Text that may be the start of a stop string is held back until
// the next tokens show it is not.
class TextStream {
 public:
  TextStream(const engine::Tokenizer& tokenizer, std::vector<std::string> stop_strings);
  // The text the tokens make safe to send now (may be empty).
  std::string push(std::span<const int32_t> tokens);
  // What was held back, at the end (nothing after a stop string).
  std::string finish();
  bool stopped() const { return stopped_; }  // a stop string appeared

 private:
  std::string release(bool at_end);

  engine::StreamDecoder decoder_;
  std::vector<std::string> stops_;
  size_t hold_bytes_ = 0;  // longest stop string - 1
  std::string pending_;    // decoded, not yet sent
  bool stopped_ = false;
};

}  // namespace inferlab::server
