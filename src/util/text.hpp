#pragma once
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace inferlab {

// Splits on `separator`, keeping empty parts ("a,,b" -> a, "", b; "" -> one empty part).
std::vector<std::string> split_text(const std::string& text, char separator);

// The whole string as a finite number; nullopt for anything else ("", "1x", "nan").
std::optional<double> parse_number(const std::string& text);

// Reads one line (without its '\n') from untrusted input, holding at most `max_bytes` of it:
// a longer line stops the read there (too_long), before the rest is taken into memory.
enum class LineRead { line, end, too_long };
LineRead read_bounded_line(std::istream& in, std::string& line, size_t max_bytes);

}  // namespace inferlab
