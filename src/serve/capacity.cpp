#include "serve/capacity.hpp"

#include "util/error.hpp"
#include "util/text.hpp"

namespace inferlab {

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

RateSearch find_max_rate(const std::vector<ServeRequest>& unit_rate_requests,
                         const EngineConfig& engine, const IterationCost& cost,
                         const CapacitySlo& slo, double tolerance) {
  RateSearch search;
  std::vector<ServeRequest> scaled = unit_rate_requests;
  auto run_at = [&](double rate, ServeSummary& summary) {
    for (size_t i = 0; i < scaled.size(); ++i) {
      scaled[i].arrival_s = unit_rate_requests[i].arrival_s / rate;
    }
    ++search.simulations;
    summary = summarize(run_engine(scaled, engine, cost));
    return summary.rejected == 0 && summary.ttft.p99_s <= slo.ttft_p99_s &&
           summary.tpot.p99_s <= slo.tpot_p99_s;
  };
  constexpr double kMaxRate = 1e5;
  ServeSummary summary;
  double lo = 0.0, hi = 1.0;
  // Grow or shrink the bracket by powers of two until it holds the boundary.
  if (run_at(hi, summary)) {
    search.at_max = summary;
    lo = hi;
    while (hi < kMaxRate) {
      hi *= 2.0;
      if (!run_at(hi, summary)) break;
      search.at_max = summary;
      lo = hi;
    }
    if (lo >= kMaxRate) {
      search.max_rate_per_s = lo;
      return search;
    }
  } else {
    while (hi > 1e-4) {
      hi *= 0.5;
      if (run_at(hi, summary)) {
        search.at_max = summary;
        lo = hi;
        hi *= 2.0;
        break;
      }
    }
    if (lo == 0.0) return search;  // misses the SLO even with requests far apart
  }
  while ((hi - lo) > tolerance * lo) {
    const double mid = 0.5 * (lo + hi);
    if (run_at(mid, summary)) {
      lo = mid;
      search.at_max = summary;
    } else {
      hi = mid;
    }
  }
  search.max_rate_per_s = lo;
  return search;
}

}  // namespace inferlab
