#include "util/text.hpp"

#include <cmath>
#include <istream>
#include <stdexcept>

namespace inferlab {

std::vector<std::string> split_text(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string current;
  for (char ch : text) {
    if (ch == separator) {
      parts.push_back(current);
      current.clear();
    } else {
      current += ch;
    }
  }
  parts.push_back(current);
  return parts;
}

std::optional<double> parse_number(const std::string& text) {
  size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used == 0 || used != text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

LineRead read_bounded_line(std::istream& in, std::string& line, size_t max_bytes) {
  line.clear();
  auto* buffer = in.rdbuf();
  if (buffer == nullptr) return LineRead::end;
  bool any = false;
  for (int c = buffer->sbumpc(); c != std::char_traits<char>::eof(); c = buffer->sbumpc()) {
    any = true;
    if (c == '\n') return LineRead::line;
    if (line.size() >= max_bytes) return LineRead::too_long;
    line.push_back(static_cast<char>(c));
  }
  return any ? LineRead::line : LineRead::end;
}

}  // namespace inferlab
