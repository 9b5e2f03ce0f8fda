#include "util/text.hpp"

#include <cmath>
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

}  // namespace inferlab
