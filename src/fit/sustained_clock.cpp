#include "fit/sustained_clock.hpp"

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab {

namespace {
// An alone run counts as unthrottled when its median clock is within this of the idle clock.
constexpr double kUnthrottledClockShare = 0.98;

std::string shape_of(const nlohmann::json& result, const std::string& context) {
  return fmt::format("{} x {} x {}", require_number(result, "m", context),
                     require_number(result, "n", context), require_number(result, "k", context));
}
}  // namespace

SustainedSlowdown sustained_slowdown_from(const nlohmann::json& document,
                                          const std::string& context) {
  if (!document.is_object() || !document.contains("runs") || !document["runs"].is_array()) {
    throw InputError(context + ": missing array 'runs'");
  }
  const auto& runs = document["runs"];
  double idle_mhz = 0.0;
  for (const auto& run : runs) {
    if (run.value("label", "") == "idle") idle_mhz = require_number(run, "sm_mhz_median", context);
  }
  if (!(idle_mhz > 0.0)) throw InputError(context + ": no 'idle' run with a positive clock");
  SustainedSlowdown best;
  bool found = false;
  for (size_t i = 0; i + 1 < runs.size(); ++i) {
    const auto& alone = runs[i];
    const auto& sustained = runs[i + 1];
    if (alone.value("label", "") != "gemm_alone" ||
        sustained.value("label", "") != "gemm_back_to_back") {
      continue;
    }
    const std::string run_context = fmt::format("{} runs[{}]", context, i);
    if (!alone.contains("result") || !sustained.contains("result")) {
      throw InputError(run_context + ": missing 'result'");
    }
    const auto& a = alone["result"];
    const auto& b = sustained["result"];
    if (shape_of(a, run_context) != shape_of(b, run_context)) {
      throw InputError(run_context + ": the alone and back-to-back GEMMs differ in shape");
    }
    SustainedSlowdown s;
    s.alone_mhz = require_number(alone, "sm_mhz_median", run_context);
    s.alone_s = require_number(a, "median_s", run_context);
    s.back_to_back_s = require_number(b, "median_s", run_context);
    if (!(s.alone_s > 0.0) || !(s.back_to_back_s > 0.0)) {
      throw InputError(run_context + ": GEMM times must be positive");
    }
    s.slowdown = std::max(1.0, s.back_to_back_s / s.alone_s);
    s.idle_mhz = idle_mhz;
    s.sustained_mhz = require_number(sustained, "sm_mhz_median", run_context);
    s.shape = shape_of(a, run_context);
    s.lower_bound = s.alone_mhz < kUnthrottledClockShare * idle_mhz;
    if (!s.lower_bound) return s;  // the first shape that kept the idle clock alone
    if (!found || s.alone_mhz > best.alone_mhz) best = s;
    found = true;
  }
  if (!found) {
    throw InputError(context + ": no gemm_alone run followed by its gemm_back_to_back run");
  }
  return best;
}

}  // namespace inferlab
