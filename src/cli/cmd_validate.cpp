#include <cstdlib>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "fit/fit_run.hpp"
#include "fit/validation.hpp"
#include "report/emit.hpp"
#include "report/validation_report.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab::cli {

namespace {
struct ValidateArgs {
  CommonArgs common;
  std::string data, max_mape, split = "all", sustained;
  bool cases = false;
};

void run_validate(const ValidateArgs& a) {
  OutputFormat format = parse_output_format(a.common.format);
  SplitFilter split = parse_split_filter(a.split);
  auto reference = read_json_file(a.data, "measured reference");
  CostRequest request = to_cost_request(a.common);
  if (!a.sustained.empty()) {
    const SustainedNote sustained = read_sustained(a.sustained);
    request.sustained_compute_slowdown = sustained.slowdown;
    request.sustained_note = sustained.note.substr(2);  // drop the leading "; "
  }
  LoadedHardware hw = load_cost(request);
  ValidationReport report = validate_against_reference(
      reference, "measured reference '" + a.data + "'", *hw.cost, hw.factors.kernel_latency_s,
      load_host_overhead(), isolated_time_for(hw), split);
  ValidationRun run{a.data, a.split, &hw, {}};
  if (!a.max_mape.empty()) run.over_bounds = groups_over_bounds(report, a.max_mape);
  emit(validation_json(report, run), validation_text(report, run, a.cases), validation_csv(report),
       format);
  if (!run.over_bounds.empty()) {
    std::cerr << "inferlab: accuracy below bounds: " << join_names(run.over_bounds, "; ") << '\n';
    std::exit(1);
  }
}
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
  cmd->add_option("--sustained", args->sustained,
                  "With --cost calibrated: the GPU's own GEMM clock under sustained load "
                  "(validation/sustained_clock.py or sustained_load.py output), in place of the "
                  "calibration's slowdown");
  cmd->add_flag("--cases", args->cases, "Table: list every case, not only the summary");
  cmd->add_option("--max-mape", args->max_mape,
                  "Fail (exit 1) when a group's MAPE exceeds its bound, e.g. "
                  "decode_graph=0.15,gemm=0.12");
  cmd->callback([args] { run_validate(*args); });
}

}  // namespace inferlab::cli
