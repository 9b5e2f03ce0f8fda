#include "serve/speculative_spec.hpp"

#include <cmath>

#include "util/error.hpp"
#include "util/text.hpp"

namespace inferlab {

namespace {
int whole_number(const std::string& key, const std::string& value, int lo, int hi) {
  const auto parsed = parse_number(value);
  if (!parsed || *parsed != std::floor(*parsed) || *parsed < lo || *parsed > hi) {
    throw InputError("--speculative " + key + " must be a whole number in [" + std::to_string(lo) +
                     ", " + std::to_string(hi) + "], got '" + value + "'");
  }
  return static_cast<int>(*parsed);
}
}  // namespace

SpeculativeSpec parse_speculative_spec(const std::string& text) {
  SpeculativeSpec spec;
  if (text.empty()) return spec;
  bool n_given = false;
  for (const std::string& item : split_text(text, ',')) {
    const auto eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (item == "ngram" || key == "draft") {
      if (!spec.draft.empty())
        throw InputError("--speculative names its drafter twice: '" + text + "'");
      spec.draft = item == "ngram" ? "ngram" : value;
      if (spec.draft.empty()) throw InputError("--speculative draft= needs ngram or a model");
    } else if (eq == std::string::npos) {
      throw InputError("--speculative: '" + item + "' is not key=value (nor ngram)");
    } else if (key == "k") {
      spec.k = whole_number("k", value, 1, 16);
    } else if (key == "n") {
      spec.ngram_max = whole_number("n", value, 1, 16);
      n_given = true;
    } else if (key == "accept") {
      const auto parsed = parse_number(value);
      if (!parsed || !(*parsed >= 0.0 && *parsed <= 1.0)) {
        throw InputError("--speculative accept must be in [0, 1], got '" + value + "'");
      }
      spec.acceptance = *parsed;
    } else if (key == "propose") {
      const auto parsed = parse_number(value);
      if (!parsed || !(*parsed > 0.0 && *parsed <= 16.0)) {
        throw InputError("--speculative propose must be in (0, k], got '" + value + "'");
      }
      spec.proposed_mean = *parsed;
    } else {
      throw InputError("--speculative: unknown key '" + key +
                       "'; known: draft, k, n, accept, propose");
    }
  }
  if (spec.draft.empty()) {
    throw InputError("--speculative needs its drafter: ngram or draft=MODEL (e.g. ngram,k=4)");
  }
  if (n_given && !spec.ngram()) throw InputError("--speculative n= is prompt lookup's (ngram)");
  if (spec.k == 0) spec.k = 4;
  if (spec.proposed_mean && *spec.proposed_mean > spec.k) {
    throw InputError("--speculative propose must be in (0, k], got more than k=" +
                     std::to_string(spec.k));
  }
  return spec;
}

}  // namespace inferlab
