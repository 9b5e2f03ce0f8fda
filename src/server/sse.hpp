#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace inferlab::server {

// Server-sent events as OpenAI's streaming API uses them: each event is one `data: PAYLOAD`
// line and a blank line; the stream ends with `data: [DONE]`.
std::string sse_event(std::string_view payload);
inline constexpr std::string_view kSseDone = "[DONE]";

// Splits a byte stream that arrives in arbitrary pieces into the data payloads of its events
// (a multi-line event's data lines joined by '\n'; comment lines and other fields ignored;
// "\r\n" accepted as a line end). A line longer than `max_line_bytes` is an error (a server
// that never ends a line must not make the client grow without bound).
class SseParser {
 public:
  explicit SseParser(size_t max_line_bytes = size_t{1} << 24) : max_line_bytes_(max_line_bytes) {}
  // The payloads of the events `bytes` completes; throws std::runtime_error past the bound.
  std::vector<std::string> feed(std::string_view bytes);

 private:
  size_t max_line_bytes_;
  std::string line_, data_;
  bool has_data_ = false;
};

}  // namespace inferlab::server
