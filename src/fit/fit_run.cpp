#include "fit/fit_run.hpp"

#include <fmt/format.h>

#include "hw/sustained_clock.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab {

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
  SustainedMeasurement sustained;
  if (!request.sustained.empty()) sustained = read_sustained_measurement(request.sustained);
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
      sustained.note.empty() ? "" : "; " + sustained.note);
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
