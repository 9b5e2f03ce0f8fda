#include "engine/tokenizer/normalizer.hpp"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/tokenizer/nfc_data.hpp"
#include "engine/tokenizer/utf8.hpp"

namespace inferlab::engine {

namespace {
namespace d = nfc_data;

constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;

uint8_t combining_class(char32_t c) {
  if (c < 0x300) return 0;
  const auto* end = d::kCombiningClasses + d::kCombiningClassCount;
  const auto* it =
      std::upper_bound(d::kCombiningClasses, end, c,
                       [](char32_t v, const d::CombiningClassRange& r) { return v < r.first; });
  if (it == d::kCombiningClasses) return 0;
  --it;
  return c <= it->last ? it->combining_class : 0;
}

void decompose(char32_t c, std::vector<char32_t>& out) {
  if (c < 0xC0) {
    out.push_back(c);
    return;
  }
  if (c >= kSBase && c < kSBase + kSCount) {
    char32_t s = c - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount) out.push_back(kTBase + s % kTCount);
    return;
  }
  const auto* end = d::kDecompositions + d::kDecompositionCount;
  const auto* it =
      std::lower_bound(d::kDecompositions, end, c,
                       [](const d::Decomposition& e, char32_t v) { return e.code_point < v; });
  if (it == end || it->code_point != c) {
    out.push_back(c);
    return;
  }
  out.insert(out.end(), d::kDecompositionChars + it->offset,
             d::kDecompositionChars + it->offset + it->length);
}

// The primary composite of a + b, or 0.
char32_t compose(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount) {
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  }
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount) {
    return a + (b - kTBase);
  }
  const auto* end = d::kCompositions + d::kCompositionCount;
  const auto* it =
      std::lower_bound(d::kCompositions, end, std::make_pair(a, b),
                       [](const d::Composition& e, std::pair<char32_t, char32_t> v) {
                         return e.first != v.first ? e.first < v.first : e.second < v.second;
                       });
  return it != end && it->first == a && it->second == b ? it->composite : 0;
}

void nfc_valid(std::string_view text, std::string& out) {
  std::vector<char32_t> chars;
  chars.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t n = utf8_sequence_length(text, pos);
    decompose(utf8_decode_at(text, pos, n), chars);
    pos += n;
  }
  // Canonical ordering: stable sort of each run of non-starters by class.
  std::vector<uint8_t> classes(chars.size());
  for (size_t i = 0; i < chars.size(); ++i) classes[i] = combining_class(chars[i]);
  for (size_t i = 0; i < chars.size();) {
    if (classes[i] == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < chars.size() && classes[j] != 0) ++j;
    if (j - i > 1) {
      std::vector<std::pair<uint8_t, char32_t>> run;
      for (size_t k = i; k < j; ++k) run.emplace_back(classes[k], chars[k]);
      std::stable_sort(run.begin(), run.end(),
                       [](const auto& x, const auto& y) { return x.first < y.first; });
      for (size_t k = i; k < j; ++k) std::tie(classes[k], chars[k]) = run[k - i];
    }
    i = j;
  }
  // Canonical composition (UAX #15).
  std::vector<char32_t> composed;
  composed.reserve(chars.size());
  size_t starter = 0;
  int last_class = -1;  // -1: no starter yet
  for (size_t i = 0; i < chars.size(); ++i) {
    char32_t c = chars[i];
    int cls = classes[i];
    if (last_class >= 0 && (last_class < cls || last_class == 0)) {
      if (char32_t composite = compose(composed[starter], c)) {
        composed[starter] = composite;
        continue;
      }
    }
    if (cls == 0) {
      starter = composed.size();
      last_class = 0;
    } else if (last_class >= 0) {
      last_class = cls;
    }
    composed.push_back(c);
  }
  for (char32_t c : composed) utf8_append(out, c);
}
}  // namespace

std::string normalize_nfc(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t run = pos;
    bool plain = true;  // below U+00C0 nothing decomposes or combines
    while (run < text.size()) {
      size_t n = utf8_sequence_length(text, run);
      if (n == 0) break;
      if (static_cast<unsigned char>(text[run]) >= 0xC3) plain = false;
      run += n;
    }
    if (plain) {
      out.append(text.substr(pos, run - pos));
    } else {
      nfc_valid(text.substr(pos, run - pos), out);
    }
    size_t bad = run;
    while (bad < text.size() && utf8_sequence_length(text, bad) == 0) ++bad;
    out.append(text.substr(run, bad - run));
    pos = bad;
  }
  return out;
}

}  // namespace inferlab::engine
