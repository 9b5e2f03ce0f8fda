#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace inferlab::engine {

// Length in bytes of the well-formed UTF-8 sequence that starts at text[pos] (1-4), or 0 when
// none does there (stray continuation byte, overlong form, surrogate, above U+10FFFF, or a
// sequence cut short). Strict as RFC 3629: the same rules as Python's and Rust's decoders.
size_t utf8_sequence_length(std::string_view text, size_t pos);

// The code point of the well-formed sequence of `length` bytes at text[pos].
char32_t utf8_decode_at(std::string_view text, size_t pos, size_t length);

// Appends the UTF-8 form of a Unicode scalar value.
void utf8_append(std::string& out, char32_t code_point);

bool is_valid_utf8(std::string_view text);

// How many bytes at the end of `text` are the start of a sequence that more bytes could still
// complete (0-3): a streaming decoder holds those back.
size_t utf8_incomplete_tail(std::string_view text);

// The text with every ill-formed byte sequence replaced by U+FFFD (one per maximal invalid
// subpart, as Python's errors="replace" and Rust's from_utf8_lossy do).
std::string utf8_lossy(std::string_view text);

}  // namespace inferlab::engine
