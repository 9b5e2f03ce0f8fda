#include "hw/sustained_clock.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "util/data_dir.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab {

namespace {
// An alone run counts as unthrottled when its median clock is within this of the idle clock.
constexpr double kUnthrottledClockShare = 0.98;
// The calibrated model's bound on the slowdown (cost/calibrated/calibrated_params.cpp).
constexpr double kMaxSlowdown = 3.0;

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
  // The label of runs[i]; an InputError when the run is not an object or its label no string.
  const auto label = [&](size_t i) {
    return optional_string(runs[i], "label", "", fmt::format("{} runs[{}]", context, i));
  };
  for (size_t i = 0; i < runs.size(); ++i) {
    if (label(i) == "idle") idle_mhz = require_number(runs[i], "sm_mhz_median", context);
  }
  if (!(idle_mhz > 0.0)) throw InputError(context + ": no 'idle' run with a positive clock");
  SustainedSlowdown best;
  bool found = false;
  for (size_t i = 0; i + 1 < runs.size(); ++i) {
    const auto& alone = runs[i];
    const auto& sustained = runs[i + 1];
    if (label(i) != "gemm_alone" || label(i + 1) != "gemm_back_to_back") {
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
    if (s.slowdown > kMaxSlowdown) {
      throw InputError(fmt::format(
          "{}: the GEMM back to back is {:.2f}x its time alone, past {}x: not a clock drop",
          run_context, s.slowdown, kMaxSlowdown));
    }
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

SustainedMeasurement read_sustained_measurement(const std::string& path, const std::string& shown) {
  const std::string name = shown.empty() ? path : shown;
  auto document = read_json_file(path, "sustained-clock measurement");
  SustainedSlowdown s =
      sustained_slowdown_from(document, "sustained-clock measurement '" + name + "'");
  SustainedMeasurement out;
  out.slowdown = s.slowdown;
  out.note = fmt::format(
      "sustained-compute slowdown {:.3f}{} = GEMM {} back to back {:.1f} us / alone {:.1f} us "
      "(SM clock {:.0f} MHz sustained, {:.0f} alone, {:.0f} idle) from {} ({})",
      s.slowdown, s.lower_bound ? " (a lower bound: throttled when alone)" : "", s.shape,
      s.back_to_back_s * 1e6, s.alone_s * 1e6, s.sustained_mhz, s.alone_mhz, s.idle_mhz, name,
      optional_string(document, "measured_at", "?", "sustained-clock measurement '" + name + "'"));
  return out;
}

std::optional<std::string> shipped_sustained_path(const std::string& hardware_name) {
  const auto shipped = data_dir() / "sustained" / (hardware_name + ".json");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(shipped, ec)) return std::nullopt;
  return shipped.string();
}

std::string shipped_sustained_label(const std::string& hardware_name) {
  return "data/sustained/" + hardware_name + ".json";
}

}  // namespace inferlab
