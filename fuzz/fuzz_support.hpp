#pragma once
// What every fuzz target shares: the input as text, and the one outcome besides success that
// is not a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "util/error.hpp"

namespace inferlab::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Runs `parse`. An InputError is the documented answer to bad input (the CLI's
// "inferlab: error: ..." and exit 2), so it is swallowed; any other exception escapes to
// libFuzzer and is reported, as are crashes, sanitizer reports, leaks and timeouts.
template <typename Parse>
void accept_input_errors(Parse&& parse) {
  try {
    parse();
  } catch (const InputError&) {
  }
}

}  // namespace inferlab::fuzz
