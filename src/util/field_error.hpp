#pragma once
#include <string>
#include <vector>

#include "util/error.hpp"

namespace inferlab {

// Bad input in one or more fields of a library request. The message names each field as the
// request spells it, between backticks ("`tp` must be in [1, 1024], got 0"); a front end that
// fills those fields from its own syntax (the CLI's flags) rewrites the marked names with
// rename_fields(). The library never names a command-line flag.
class FieldError : public InputError {
 public:
  explicit FieldError(const std::string& message) : InputError(message) {}
};

// `message` with every `field` replaced by rename(field) (a callable returning the new text).
template <typename Rename>
std::string rename_fields(const std::string& message, Rename rename) {
  std::string out;
  size_t at = 0;
  while (at < message.size()) {
    const size_t open = message.find('`', at);
    const size_t close = open == std::string::npos ? open : message.find('`', open + 1);
    if (close == std::string::npos) break;
    out += message.substr(at, open - at);
    out += rename(message.substr(open + 1, close - open - 1));
    at = close + 1;
  }
  return out + message.substr(at);
}

}  // namespace inferlab
