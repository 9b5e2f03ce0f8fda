#pragma once
#include <stdexcept>
#include <string>

namespace inferlab {

// Bad input from the user (unknown name, malformed file, impossible size). The CLI turns it
// into "inferlab: error: <message>" and exit code 2; a message says what is wrong and how to
// fix it.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

// Joins names for "known: a, b, c" messages. (C++17, so CUDA sources can include it.)
template <typename Names>
std::string join_names(const Names& names, const char* separator = ", ") {
  std::string out;
  for (const auto& name : names) {
    if (!out.empty()) out += separator;
    out += name;
  }
  return out;
}

}  // namespace inferlab
