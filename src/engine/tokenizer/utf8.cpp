#include "engine/tokenizer/utf8.hpp"

namespace inferlab::engine {

namespace {
inline bool is_continuation(unsigned char c) {
  return (c & 0xC0) == 0x80;
}

// The range the second byte of a sequence led by `lead` must fall in (Unicode table 3-7), and
// the sequence length; length 0 for a byte that cannot lead.
struct LeadRule {
  size_t length;
  unsigned char second_min, second_max;
};
LeadRule lead_rule(unsigned char lead) {
  if (lead < 0x80) return {1, 0, 0};
  if (lead >= 0xC2 && lead <= 0xDF) return {2, 0x80, 0xBF};
  if (lead == 0xE0) return {3, 0xA0, 0xBF};
  if (lead >= 0xE1 && lead <= 0xEC) return {3, 0x80, 0xBF};
  if (lead == 0xED) return {3, 0x80, 0x9F};
  if (lead >= 0xEE && lead <= 0xEF) return {3, 0x80, 0xBF};
  if (lead == 0xF0) return {4, 0x90, 0xBF};
  if (lead >= 0xF1 && lead <= 0xF3) return {4, 0x80, 0xBF};
  if (lead == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

// How many bytes from pos form a valid prefix of some sequence (at most the full length).
size_t valid_prefix(std::string_view text, size_t pos, LeadRule rule) {
  size_t n = 1;
  if (rule.length <= 1) return rule.length;
  if (pos + 1 >= text.size()) return n;
  auto second = static_cast<unsigned char>(text[pos + 1]);
  if (second < rule.second_min || second > rule.second_max) return n;
  n = 2;
  while (n < rule.length && pos + n < text.size() &&
         is_continuation(static_cast<unsigned char>(text[pos + n]))) {
    ++n;
  }
  return n;
}
}  // namespace

size_t utf8_sequence_length(std::string_view text, size_t pos) {
  if (pos >= text.size()) return 0;
  LeadRule rule = lead_rule(static_cast<unsigned char>(text[pos]));
  if (rule.length == 0) return 0;
  return valid_prefix(text, pos, rule) == rule.length ? rule.length : 0;
}

char32_t utf8_decode_at(std::string_view text, size_t pos, size_t length) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[pos + i]); };
  switch (length) {
    case 1:
      return byte(0);
    case 2:
      return (char32_t(byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
    case 3:
      return (char32_t(byte(0) & 0x0F) << 12) | (char32_t(byte(1) & 0x3F) << 6) | (byte(2) & 0x3F);
    default:
      return (char32_t(byte(0) & 0x07) << 18) | (char32_t(byte(1) & 0x3F) << 12) |
             (char32_t(byte(2) & 0x3F) << 6) | (byte(3) & 0x3F);
  }
}

void utf8_append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

bool is_valid_utf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t n = utf8_sequence_length(text, pos);
    if (n == 0) return false;
    pos += n;
  }
  return true;
}

size_t utf8_incomplete_tail(std::string_view text) {
  // A sequence is at most 4 bytes long: look for its lead among the last 3 bytes.
  size_t start = text.size() >= 3 ? text.size() - 3 : 0;
  for (size_t pos = start; pos < text.size(); ++pos) {
    LeadRule rule = lead_rule(static_cast<unsigned char>(text[pos]));
    if (rule.length < 2) continue;
    size_t have = text.size() - pos;
    if (have < rule.length && valid_prefix(text, pos, rule) == have) return have;
  }
  return 0;
}

std::string utf8_lossy(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    LeadRule rule = lead_rule(static_cast<unsigned char>(text[pos]));
    size_t prefix = rule.length == 0 ? 0 : valid_prefix(text, pos, rule);
    if (rule.length != 0 && prefix == rule.length) {
      out.append(text.substr(pos, prefix));
      pos += prefix;
    } else {
      out += "\xEF\xBF\xBD";
      pos += prefix == 0 ? 1 : prefix;
    }
  }
  return out;
}

}  // namespace inferlab::engine
