#pragma once
#include <string>
#include <string_view>

namespace inferlab::engine {

// Unicode Normalization Form C (canonical decomposition, canonical ordering, canonical
// composition; Hangul algorithmic), as HF's "NFC" normalizer (Qwen2, Qwen3) applies before
// pre-tokenizing. Ill-formed UTF-8 bytes pass through unchanged and act as boundaries.
// Linear in the text (canonical ordering sorts each run of combining marks: n log n at worst).
std::string normalize_nfc(std::string_view text);

}  // namespace inferlab::engine
