#include "server/text_stream.hpp"

#include <algorithm>

namespace inferlab::server {

TextStream::TextStream(const engine::Tokenizer& tokenizer, std::vector<std::string> stop_strings)
    : decoder_(tokenizer, /*skip_special_tokens=*/true), stops_(std::move(stop_strings)) {
  for (const auto& s : stops_) hold_bytes_ = std::max(hold_bytes_, s.size() - 1);
}

std::string TextStream::push(std::span<const int32_t> tokens) {
  if (stopped_) return "";
  for (int32_t id : tokens) pending_ += decoder_.push(id);
  return release(false);
}

std::string TextStream::finish() {
  if (stopped_) return "";
  pending_ += decoder_.finish();
  return release(true);
}

std::string TextStream::release(bool at_end) {
  size_t first_stop = std::string::npos;
  for (const auto& s : stops_) first_stop = std::min(first_stop, pending_.find(s));
  std::string out;
  if (first_stop != std::string::npos) {
    stopped_ = true;
    out = pending_.substr(0, first_stop);
    pending_.clear();
    return out;
  }
  size_t send = at_end || pending_.size() <= hold_bytes_ ? (at_end ? pending_.size() : 0)
                                                         : pending_.size() - hold_bytes_;
  // Never split a UTF-8 character: back off over continuation bytes.
  while (send > 0 && send < pending_.size() &&
         (static_cast<unsigned char>(pending_[send]) & 0xC0) == 0x80) {
    --send;
  }
  out = pending_.substr(0, send);
  pending_.erase(0, send);
  return out;
}

}  // namespace inferlab::server
