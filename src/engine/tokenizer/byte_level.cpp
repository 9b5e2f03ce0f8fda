#include "engine/tokenizer/byte_level.hpp"

#include "engine/tokenizer/utf8.hpp"

namespace inferlab::engine {

namespace {
bool maps_to_itself(unsigned byte) {
  return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
         (byte >= 0xAE && byte <= 0xFF);
}

struct Tables {
  std::array<char32_t, 256> code_point{};
  std::array<std::string, 256> text;
  std::array<int, 256 + 68> byte_of{};  // code point -> byte, -1 for none
  Tables() {
    byte_of.fill(-1);
    unsigned next = 0;
    for (unsigned b = 0; b < 256; ++b) {
      code_point[b] = maps_to_itself(b) ? b : 256 + next++;
      utf8_append(text[b], code_point[b]);
      byte_of[code_point[b]] = static_cast<int>(b);
    }
  }
};
const Tables& tables() {
  static const Tables t;
  return t;
}
}  // namespace

char32_t byte_to_code_point(unsigned char byte) {
  return tables().code_point[byte];
}

const std::array<std::string, 256>& byte_level_alphabet() {
  return tables().text;
}

std::optional<unsigned char> code_point_to_byte(char32_t c) {
  const auto& byte_of = tables().byte_of;
  if (c >= byte_of.size() || byte_of[c] < 0) return std::nullopt;
  return static_cast<unsigned char>(byte_of[c]);
}

void append_byte_level(std::string& out, std::string_view bytes) {
  const auto& text = tables().text;
  for (char c : bytes) out += text[static_cast<unsigned char>(c)];
}

std::optional<std::string> bytes_of_byte_level(std::string_view text) {
  const auto& inverse = tables().byte_of;
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t n = utf8_sequence_length(text, pos);
    if (n == 0) return std::nullopt;
    char32_t c = utf8_decode_at(text, pos, n);
    if (c >= inverse.size() || inverse[c] < 0) return std::nullopt;
    out += static_cast<char>(inverse[c]);
    pos += n;
  }
  return out;
}

}  // namespace inferlab::engine
