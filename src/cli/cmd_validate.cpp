#include <fmt/format.h>

#include <iostream>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "predict/validation.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab::cli {

namespace {
struct ValidateArgs {
  CommonArgs common;
  std::string data, max_mape, split = "all";
  bool cases = false;
};
}  // namespace

void register_validate(CLI::App& app) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "Predicted vs measured for every operator and step of a reference file");
  add_hardware_options(cmd, args->common);
  add_format_option(cmd, args->common);
  cmd->add_option("--data", args->data,
                  "Reference JSON (validation/torch_reference.py output), or a hardware profile "
                  "(its probe sweeps)")
      ->required();
  cmd->add_option("--split", args->split,
                  "Operators to check: all, fit (used to fit the model) or holdout (never "
                  "used; whole steps count as held out)")
      ->capture_default_str();
  cmd->add_flag("--cases", args->cases, "Table: list every case, not only the summary");
  cmd->add_option("--max-mape", args->max_mape,
                  "Fail (exit 1) when a group's MAPE exceeds its bound, e.g. "
                  "decode_graph=0.15,gemm=0.12");
  cmd->callback([args] {
    const auto& a = *args;
    OutputFormat format = parse_output_format(a.common.format);
    SplitFilter split = parse_split_filter(a.split);
    auto reference = read_json_file(a.data, "measured reference");
    LoadedHardware hw = load_cost_model(a.common);
    IsolatedOpTime isolated;
    if (hw.calibrated) {
      const CalibratedCostModel* model = hw.calibrated;
      isolated = [model](const Op& op) { return model->isolated_time_s(op); };
    } else if (hw.tilesim) {
      const TileSimCostModel* model = hw.tilesim;
      isolated = [model](const Op& op) { return model->isolated_time_s(op); };
    }
    ValidationReport report = validate_against_reference(
        reference, "measured reference '" + a.data + "'", *hw.cost, hw.factors.kernel_latency_s,
        load_host_overhead(), isolated, split);
    std::vector<std::string> over;
    if (!a.max_mape.empty()) over = groups_over_bounds(report, a.max_mape);
    if (format == OutputFormat::json) {
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
      print_json({{"data", a.data},
                  {"split", a.split},
                  {"cost_model", hw.cost->name()},
                  {"cost_source", hw.source},
                  {"hardware", hw.spec.name},
                  {"hardware_source", hw.spec.ceiling_source()},
                  {"isolated_op_floor_s", report.isolated_op_floor_s},
                  {"groups", groups},
                  {"cases", cases},
                  {"over_bounds", over}});
    } else {
      bool csv = format == OutputFormat::csv;
      if (a.cases || csv) {
        Table t({"group", "case", "measured_ms", "predicted_ms", "error"});
        for (const auto& c : report.cases) {
          t.add_row(
              {c.group, c.label, fmt::format("{:.4f}", c.measured_s * 1e3),
               fmt::format("{:.4f}", c.predicted_s * 1e3),
               csv ? fmt::format("{:.4f}", c.error()) : fmt::format("{:+.1f}%", 100 * c.error())});
        }
        std::cout << (csv ? t.to_csv() : t.to_text() + "\n");
      }
      if (!csv) {
        Table t({"group", "cases", "mape", "worst"});
        for (const auto& [name, g] : report.groups) {
          t.add_row({name, std::to_string(g.cases), fmt::format("{:.1f}%", 100 * g.mape),
                     fmt::format("{:+.1f}%", 100 * g.worst_error)});
        }
        std::cout << fmt::format("{} on {} ({} cost model; ceilings: {}; {} cases)\n", a.data,
                                 hw.spec.name, hw.cost->name(), hw.spec.ceiling_source(), a.split)
                  << t.to_text();
      }
    }
    if (!over.empty()) {
      std::cerr << "inferlab: accuracy below bounds: " << join_names(over, "; ") << '\n';
      std::exit(1);
    }
  });
}

}  // namespace inferlab::cli
