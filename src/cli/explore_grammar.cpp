#include "cli/explore_grammar.hpp"

#include <fmt/format.h>

#include <cmath>

#include "util/field_error.hpp"
#include "util/text.hpp"

namespace inferlab::cli {

namespace {
int64_t parse_count(const std::string& value, const std::string& what, int64_t max_value) {
  const auto n = parse_number(value);
  if (!n || *n != std::floor(*n) || *n < 1 || *n > static_cast<double>(max_value)) {
    throw FieldError(fmt::format("`workload`: {} must be a whole number in [1, {}], got '{}'", what,
                                 max_value, value));
  }
  return static_cast<int64_t>(*n);
}

}  // namespace

std::vector<DesignAxis> parse_design_axes(const std::string& text) {
  std::vector<DesignAxis> axes;
  for (const std::string& token : split_text(text, ',')) {
    const auto eq = token.find('=');
    if (eq != std::string::npos) {
      const std::string key = token.substr(0, eq);
      if (key.empty()) throw FieldError("`axes`: '" + token + "' has no key before '='");
      for (const auto& axis : axes) {
        if (axis.key == key) throw FieldError("`axes`: key '" + key + "' given twice");
      }
      axes.push_back({key, {}});
      if (eq + 1 < token.size()) axes.back().values.push_back(token.substr(eq + 1));
    } else if (!token.empty()) {
      if (axes.empty()) throw FieldError("`axes`: '" + token + "' comes before any key=");
      axes.back().values.push_back(token);
    }
  }
  for (const auto& axis : axes) {
    if (axis.values.empty()) throw FieldError("`axes`: key '" + axis.key + "' has no values");
  }
  if (axes.empty()) throw FieldError("`axes` needs key=value[,value...], e.g. cores=66,132");
  return axes;
}

DesignWorkload parse_design_workload(const std::string& text) {
  DesignWorkload w;
  w.text = text;
  const auto colon = text.find(':');
  const std::string phase = text.substr(0, colon);
  if (phase == "prefill") {
    w.phase = Phase::prefill;
    w.batch = 1;
  } else if (phase == "decode") {
    w.phase = Phase::decode;
  } else {
    throw FieldError("`workload` must start with prefill or decode, got '" + text + "'");
  }
  if (colon == std::string::npos) return w;
  for (const std::string& item : split_text(text.substr(colon + 1), ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw FieldError("`workload`: '" + item + "' is not key=value");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    constexpr int64_t kMaxTokens = int64_t{1} << 24;
    if (key == "batch") {
      w.batch = value == "max" ? 0 : parse_count(value, "batch", kMaxTokens);
    } else if (key == "max_batch") {
      w.max_batch = parse_count(value, "max_batch", kMaxTokens);
    } else if (key == "tokens") {
      w.tokens = parse_count(value, "tokens", kMaxTokens);
    } else if (key == "context") {
      w.context = parse_count(value, "context", kMaxTokens);
    } else {
      throw FieldError("`workload`: unknown key '" + key +
                       "'; known: batch (a number or max), max_batch, tokens, context");
    }
  }
  return w;
}

}  // namespace inferlab::cli
