#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace inferlab {

// Splits on `separator`, keeping empty parts ("a,,b" -> a, "", b; "" -> one empty part).
std::vector<std::string> split_text(const std::string& text, char separator);

// The whole string as a finite number; nullopt for anything else ("", "1x", "nan").
std::optional<double> parse_number(const std::string& text);

}  // namespace inferlab
