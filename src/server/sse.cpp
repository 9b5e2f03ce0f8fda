#include "server/sse.hpp"

#include <stdexcept>

namespace inferlab::server {

std::string sse_event(std::string_view payload) {
  std::string event = "data: ";
  event += payload;
  event += "\n\n";
  return event;
}

std::vector<std::string> SseParser::feed(std::string_view bytes) {
  std::vector<std::string> events;
  for (char c : bytes) {
    if (c != '\n') {
      if (line_.size() >= max_line_bytes_) {
        throw std::runtime_error("server-sent event line longer than " +
                                 std::to_string(max_line_bytes_) + " bytes");
      }
      line_.push_back(c);
      continue;
    }
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    if (line_.empty()) {  // a blank line ends the event
      if (has_data_) events.push_back(std::move(data_));
      data_.clear();
      has_data_ = false;
    } else if (line_.rfind("data:", 0) == 0) {
      std::string_view value(line_);
      value.remove_prefix(5);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      if (has_data_) data_.push_back('\n');
      data_ += value;
      has_data_ = true;
    }  // ":comment", "event:", "id:", "retry:" carry nothing the OpenAI stream needs
    line_.clear();
  }
  return events;
}

}  // namespace inferlab::server
