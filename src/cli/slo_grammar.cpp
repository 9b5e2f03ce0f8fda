#include "cli/slo_grammar.hpp"

#include "util/error.hpp"
#include "util/text.hpp"

namespace inferlab::cli {

namespace {
double parse_duration_ms_default(const std::string& text, const std::string& key) {
  std::string number = text;
  double scale = 1e-3;  // plain numbers are milliseconds
  if (text.size() > 2 && text.substr(text.size() - 2) == "ms") {
    number = text.substr(0, text.size() - 2);
  } else if (text.size() > 1 && text.back() == 's') {
    number = text.substr(0, text.size() - 1);
    scale = 1.0;
  }
  const double v = parse_number(number).value_or(0.0);
  if (!(v > 0.0)) {
    throw InputError("--slo " + key + "=" + text +
                     ": needs a positive time (ms, or 's'/'ms' unit)");
  }
  return v * scale;
}
}  // namespace

CapacitySlo parse_capacity_slo(const std::string& text) {
  CapacitySlo slo;
  for (const std::string& item : split_text(text, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw InputError("--slo: '" + item + "' is not key=value");
    const std::string key = item.substr(0, eq);
    const double v = parse_duration_ms_default(item.substr(eq + 1), key);
    if (key == "ttft_p99") {
      slo.ttft_p99_s = v;
    } else if (key == "tpot_p99") {
      slo.tpot_p99_s = v;
    } else {
      throw InputError("--slo: unknown key '" + key + "'; known: ttft_p99, tpot_p99");
    }
  }
  if (slo.ttft_p99_s <= 0.0 || slo.tpot_p99_s <= 0.0) {
    throw InputError("--slo needs both ttft_p99 and tpot_p99");
  }
  return slo;
}

}  // namespace inferlab::cli
