#include "report/validation_report.hpp"

#include <fmt/format.h>

#include "report/table.hpp"

namespace inferlab {

namespace {
Table cases_table(const ValidationReport& report, bool csv) {
  Table t({"group", "case", "measured_ms", "predicted_ms", "error"});
  for (const auto& c : report.cases) {
    t.add_row({c.group, c.label, fmt::format("{:.4f}", c.measured_s * 1e3),
               fmt::format("{:.4f}", c.predicted_s * 1e3),
               csv ? fmt::format("{:.4f}", c.error()) : fmt::format("{:+.1f}%", 100 * c.error())});
  }
  return t;
}
}  // namespace

nlohmann::json validation_json(const ValidationReport& report, const ValidationRun& run) {
  nlohmann::json groups = nlohmann::json::object(), cases = nlohmann::json::array();
  for (const auto& [name, g] : report.groups) {
    groups[name] = {{"cases", g.cases}, {"mape", g.mape}, {"worst_error", g.worst_error}};
  }
  for (const auto& c : report.cases) {
    cases.push_back({{"group", c.group},
                     {"case", c.label},
                     {"measured_ms", c.measured_s * 1e3},
                     {"predicted_ms", c.predicted_s * 1e3},
                     {"error", c.error()}});
  }
  const LoadedCost& hw = *run.cost;
  return {{"data", run.data},
          {"split", run.split},
          {"cost_model", hw.cost->name()},
          {"cost_source", hw.source},
          {"hardware", hw.spec.name},
          {"hardware_source", hw.spec.ceiling_source()},
          {"host_source", run.host_source},
          {"isolated_op_floor_s", report.isolated_op_floor_s},
          {"groups", groups},
          {"cases", cases},
          {"over_bounds", run.over_bounds}};
}

std::string validation_text(const ValidationReport& report, const ValidationRun& run,
                            bool list_cases) {
  std::string text = list_cases ? cases_table(report, false).to_text() + "\n" : "";
  Table t({"group", "cases", "mape", "worst"});
  for (const auto& [name, g] : report.groups) {
    t.add_row({name, std::to_string(g.cases), fmt::format("{:.1f}%", 100 * g.mape),
               fmt::format("{:+.1f}%", 100 * g.worst_error)});
  }
  const LoadedCost& hw = *run.cost;
  return text +
         fmt::format("{} on {} ({} cost model; ceilings: {}; {} cases)\n", run.data, hw.spec.name,
                     hw.cost->name(), hw.spec.ceiling_source(), run.split) +
         (run.host_source.empty() ? std::string() : "host: " + run.host_source + "\n") +
         t.to_text();
}

std::string validation_csv(const ValidationReport& report) {
  return cases_table(report, true).to_csv();
}

}  // namespace inferlab
