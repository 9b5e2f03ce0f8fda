#pragma once
#include <cstddef>
#include <cstdint>

// Unicode tables for NFC (generated into nfc_data.cpp by nfc_tables.py), sorted by code point.
namespace inferlab::engine::nfc_data {

struct CombiningClassRange {
  char32_t first, last;
  uint8_t combining_class;
};
struct Decomposition {  // the full canonical decomposition of code_point
  char32_t code_point;
  uint32_t offset;  // into kDecompositionChars
  uint8_t length;
};
struct Composition {  // first + second compose to composite (primary composites only)
  char32_t first, second, composite;
};

extern const char* const kUnicodeVersion;
extern const CombiningClassRange kCombiningClasses[];
extern const size_t kCombiningClassCount;
extern const char32_t kDecompositionChars[];
extern const Decomposition kDecompositions[];
extern const size_t kDecompositionCount;
extern const Composition kCompositions[];
extern const size_t kCompositionCount;

}  // namespace inferlab::engine::nfc_data
