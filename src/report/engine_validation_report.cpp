#include "report/engine_validation_report.hpp"

#include <fmt/format.h>

#include "report/table.hpp"

namespace inferlab {

namespace {

std::string percent(double fraction, bool csv, bool sign = true) {
  if (csv) return fmt::format("{:.4f}", fraction);
  return sign ? fmt::format("{:+.1f}%", 100 * fraction) : fmt::format("{:.1f}%", 100 * fraction);
}

Table cases_table(const EngineValidation& report, bool csv) {
  Table t({"kind", "combination", "phase", "case", "class", "measured_ms", "predicted_ms", "error",
           "split"});
  for (const auto& s : report.steps) {
    t.add_row({"step", s.combination, s.phase, s.label, "",
               fmt::format("{:.4f}", s.measured_s * 1e3),
               fmt::format("{:.4f}", s.predicted_s * 1e3), percent(s.error(), csv),
               s.held_out ? "holdout" : "fit"});
  }
  for (const auto& k : report.classes) {
    t.add_row({"class", k.combination, k.phase, k.label, k.kernel_class,
               fmt::format("{:.4f}", k.measured_s * 1e3),
               fmt::format("{:.4f}", k.predicted_s * 1e3), percent(k.error(), csv),
               k.held_out ? "holdout" : "fit"});
  }
  return t;
}

nlohmann::json group_json(const GroupAccuracy& g) {
  return {{"cases", g.cases}, {"mape", g.mape}, {"worst_error", g.worst_error}};
}

}  // namespace

nlohmann::json engine_validation_json(const EngineValidation& report,
                                      const EngineValidationRun& run) {
  nlohmann::json steps = nlohmann::json::array(), classes = nlohmann::json::array();
  for (const auto& s : report.steps) {
    steps.push_back({{"file", s.file},
                     {"combination", s.combination},
                     {"phase", s.phase},
                     {"case", s.label},
                     {"measured_ms", s.measured_s * 1e3},
                     {"predicted_ms", s.predicted_s * 1e3},
                     {"error", s.error()},
                     {"split", s.held_out ? "holdout" : "fit"}});
  }
  for (const auto& k : report.classes) {
    classes.push_back({{"file", k.file},
                       {"combination", k.combination},
                       {"phase", k.phase},
                       {"case", k.label},
                       {"kernel", k.kernel_class},
                       {"measured_ms", k.measured_s * 1e3},
                       {"predicted_ms", k.predicted_s * 1e3},
                       {"error", k.error()},
                       {"measured_calls", k.measured_calls},
                       {"predicted_calls", k.predicted_calls},
                       {"split", k.held_out ? "holdout" : "fit"}});
  }
  nlohmann::json groups = nlohmann::json::object();
  for (const auto& [name, g] : report.groups) groups[name] = group_json(g);
  return {{"kind", "engine_validation"},
          {"data", run.files},
          {"split", run.split},
          {"cost_sources", report.cost_sources},
          {"groups", groups},
          {"steps", steps},
          {"classes", classes},
          {"notes", report.notes},
          {"over_bounds", run.over_bounds}};
}

std::string engine_validation_text(const EngineValidation& report, const EngineValidationRun& run,
                                   bool list_cases) {
  std::string text = list_cases ? cases_table(report, false).to_text() + "\n" : "";
  Table steps({"steps", "cases", "mape", "worst"});
  Table classes({"kernel class", "cases", "mape", "worst"});
  for (const auto& [name, g] : report.groups) {
    Table& t = name.rfind("kernel:", 0) == 0 ? classes : steps;
    t.add_row({name.rfind("kernel:", 0) == 0 ? name.substr(7) : name, std::to_string(g.cases),
               percent(g.mape, false, false), percent(g.worst_error, false)});
  }
  text += fmt::format("{} engine profile file(s), {} points ({} split)\n", run.files.size(),
                      report.steps.size(), run.split);
  for (const auto& [hardware, source] : report.cost_sources) {
    text += fmt::format("{} priced by {}\n", hardware, source);
  }
  text += steps.to_text();
  if (!report.classes.empty()) text += "\n" + classes.to_text();
  if (!report.notes.empty()) {
    text += "\nnotes:\n";
    for (const auto& n : report.notes) text += "  " + n + "\n";
  }
  return text;
}

std::string engine_validation_csv(const EngineValidation& report) {
  return cases_table(report, true).to_csv();
}

namespace {
Table fit_table(const EngineFit& fit, bool csv) {
  Table t({"key", "points", "t0_us", "compute_efficiency", "memory_efficiency", "mape"});
  for (const auto& [key, k] : fit.costs.kernels) {
    t.add_row({key, std::to_string(k.points), fmt::format("{:.3f}", k.t0_s * 1e6),
               fmt::format("{:.3f}", k.compute_efficiency),
               fmt::format("{:.3f}", k.memory_efficiency), percent(k.mape, csv, false)});
  }
  return t;
}
}  // namespace

std::string engine_fit_text(const EngineFit& fit) {
  const EngineCosts& c = fit.costs;
  std::string text = fit_table(fit, false).to_text();
  text += fmt::format(
      "\nsteps: profile mark {:.3f} us per call; eager: host {:.3f} us per launch, {:+.1f} us per "
      "step; CUDA graph: {:+.3f} us per kernel ({:+.3f} more per programmatic launch), {:+.1f} us "
      "per step\n",
      c.profile_mark_s * 1e6, c.host_per_kernel_s * 1e6, c.eager_step_s * 1e6,
      c.graph_per_kernel_s * 1e6, c.graph_programmatic_per_kernel_s * 1e6, c.graph_step_s * 1e6);
  if (c.fit_summary.contains("fit_steps")) {
    for (const auto& [phase, s] : c.fit_summary["fit_steps"].items()) {
      text += fmt::format("fit split {}: {} steps, MAPE {:.1f}%\n", phase, s["points"].get<int>(),
                          100 * s["mape"].get<double>());
    }
  }
  text += fmt::format("{} fit points, {} class samples; {} held-out points not used\n",
                      fit.fit_points, fit.class_samples, fit.held_out_points);
  if (!fit.notes.empty()) {
    text += "notes:\n";
    for (const auto& n : fit.notes) text += "  " + n + "\n";
  }
  return text;
}

std::string engine_fit_csv(const EngineFit& fit) {
  return fit_table(fit, true).to_csv();
}

}  // namespace inferlab
