#pragma once
#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace inferlab::engine {

// GPT-2's bytes_to_unicode: every byte maps to one printable code point (printable Latin-1
// bytes to themselves, the others to U+0100 upward in byte order), so byte-level BPE tokens
// are text. Space (0x20) becomes 'Ġ' (U+0120), newline 'Ċ' (U+010A).
char32_t byte_to_code_point(unsigned char byte);

// The UTF-8 text of byte_to_code_point for each byte.
const std::array<std::string, 256>& byte_level_alphabet();

// The inverse: the byte a code point stands for, if it is one of the 256.
std::optional<unsigned char> code_point_to_byte(char32_t code_point);

// Maps raw bytes to their byte-level text (each byte becomes one code point).
void append_byte_level(std::string& out, std::string_view bytes);

// Maps byte-level text back to bytes; nullopt when a character is not one of the 256 (HF's
// ByteLevel decoder then keeps that token's UTF-8 text as it is).
std::optional<std::string> bytes_of_byte_level(std::string_view text);

}  // namespace inferlab::engine
