#include "fit/fit_run.hpp"

#include <fmt/format.h>

#include "fit/sustained_clock.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab {

SustainedNote read_sustained(const std::string& path) {
  SustainedNote out;
  if (path.empty()) return out;
  auto document = read_json_file(path, "sustained-clock measurement");
  SustainedSlowdown s =
      sustained_slowdown_from(document, "sustained-clock measurement '" + path + "'");
  out.slowdown = s.slowdown;
  out.note = fmt::format(
      "; sustained-compute slowdown {:.3f}{} = GEMM {} back to back {:.1f} us / alone {:.1f} us "
      "(SM clock {:.0f} MHz sustained, {:.0f} alone, {:.0f} idle) from {} ({})",
      s.slowdown, s.lower_bound ? " (a lower bound: throttled when alone)" : "", s.shape,
      s.back_to_back_s * 1e6, s.alone_s * 1e6, s.sustained_mhz, s.alone_mhz, s.idle_mhz, path,
      document.value("measured_at", std::string("?")));
  return out;
}

namespace {
nlohmann::json group_summary(const CalibratedFit& fit) {
  nlohmann::json summary = nlohmann::json::object();
  for (const auto& g : fit.groups) {
    summary[std::string(calib_group_name(g.group))] = {
        {"points", g.points}, {"mape", g.mape}, {"evaluations", g.evaluations}};
  }
  return summary;
}
}  // namespace

CalibratedFit run_calibrated_fit(const HardwareSpec& hw, const FitInputs& inputs,
                                 const FitRequest& request) {
  const SustainedNote sustained = read_sustained(request.sustained);
  // The fit sees the fit split only: nothing of the held-out rows, their times included.
  CalibratedFit fit = fit_calibrated(hw, load_delay_factors(hw), fit_split(inputs.measured),
                                     inputs.isolated_floor_s);
  fit.params[CalibParam::sustained_compute_slowdown] = sustained.slowdown;
  fit.params.source = fmt::format(
      "inferlab fit --cost calibrated --hardware {} --profile {}{}{} against {} ceilings: {}; "
      "{} held-out measurements not used{}",
      hw.name, request.profile, request.data.empty() ? "" : " --data " + request.data,
      request.sustained.empty() ? "" : " --sustained " + request.sustained,
      hw.profile ? "measured" : "datasheet", join_names(inputs.sources, "; "), inputs.held_out,
      sustained.note);
  fit.params.fit_summary = group_summary(fit);
  return fit;
}

DelayFactorFit run_delay_factor_fit(const HardwareSpec& hw, const FitInputs& inputs,
                                    const FitRequest& request) {
  // The held-out split is never fitted.
  DelayFactorFit fit = fit_delay_factors(hw, inputs.start, fit_split(inputs.measured));
  fit.factors.source = fmt::format(
      "inferlab fit --hardware {} --profile {}{} against {} ceilings: {}; classes without "
      "points keep data/delay_factors/spec.json",
      hw.name, request.profile, request.data.empty() ? "" : " --data " + request.data,
      hw.profile ? "measured" : "datasheet", join_names(inputs.sources, "; "));
  return fit;
}

}  // namespace inferlab
