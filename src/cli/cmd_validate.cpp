#include <map>
#include <memory>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "fit/validate_engine.hpp"
#include "fit/validation.hpp"
#include "report/emit.hpp"
#include "report/engine_validation_report.hpp"
#include "report/validation_report.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab::cli {

namespace {
struct ValidateArgs {
  CommonArgs common;
  std::vector<std::string> data;
  std::string max_mape, split = "all", sustained, host = kHostAuto;
  bool cases = false, engine = false;
};

[[noreturn]] void fail_bounds(const std::vector<std::string>& over) {
  throw CheckFailed("accuracy below bounds: " + join_names(over, "; "));
}

// --engine: `predict --framework inferlab` against the engine's own profiles, each priced on the
// profile's hardware with --engine-costs (auto: that hardware's shipped engine costs).
void run_engine_validate(const ValidateArgs& a, OutputFormat format, SplitFilter split) {
  if (!a.sustained.empty()) throw InputError("--sustained is not used with --engine");
  const auto profiles = load_engine_profiles(a.data);
  std::map<std::string, std::unique_ptr<LoadedCost>> loaded;
  const EngineCostLoader load = [&](const std::string& hardware) -> const LoadedCost& {
    auto& slot = loaded[hardware];
    if (!slot) {
      CommonArgs c = a.common;
      c.hardware = hardware;
      c.framework = "inferlab";
      slot = std::make_unique<LoadedCost>(load_cost_model(c));
    }
    return *slot;
  };
  const EngineValidation report = validate_engine(profiles, load, split);
  EngineValidationRun run{a.data, a.split, {}};
  if (!a.max_mape.empty()) run.over_bounds = engine_groups_over_bounds(report, a.max_mape);
  emit(engine_validation_json(report, run), engine_validation_text(report, run, a.cases),
       engine_validation_csv(report), format);
  if (!run.over_bounds.empty()) fail_bounds(run.over_bounds);
}

void run_validate(const ValidateArgs& a) {
  OutputFormat format = parse_output_format(a.common.format);
  SplitFilter split = parse_split_filter(a.split);
  if (a.engine) {
    if (a.host != kHostAuto) throw InputError("--host is not used with --engine");
    return run_engine_validate(a, format, split);
  }
  if (a.data.size() != 1) {
    throw InputError("validate takes one --data file (several only with --engine)");
  }
  const std::string& data = a.data.front();
  auto reference = read_json_file(data, "measured reference");
  CostRequest request = to_cost_request(a.common);
  request.sustained = a.sustained;
  LoadedHardware hw = load_cost(request);
  const HostOverhead host = host_overhead_for(hw.spec.name, a.host);
  ValidationReport report =
      validate_against_reference(reference, "measured reference '" + data + "'", *hw.cost,
                                 hw.factors.kernel_latency_s, host, isolated_time_for(hw), split);
  ValidationRun run{data, a.split, &hw, {}, host.host_source};
  if (!a.max_mape.empty()) run.over_bounds = groups_over_bounds(report, a.max_mape);
  emit(validation_json(report, run), validation_text(report, run, a.cases), validation_csv(report),
       format);
  if (!run.over_bounds.empty()) fail_bounds(run.over_bounds);
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
                  "(its probe sweeps); with --engine, one or more engine profiles")
      ->required();
  cmd->add_option("--split", args->split,
                  "Operators to check: all, fit (used to fit the model) or holdout (never "
                  "used; whole steps count as held out; with --engine, the profiles' own split)")
      ->capture_default_str();
  cmd->add_option("--sustained", args->sustained,
                  "Calibrated model: the GPU's own GEMM clock under sustained load, in place of "
                  "the calibration's slowdown (the default here, unlike predict's): a "
                  "measurement file (validation/sustained_clock.py or sustained_load.py output), "
                  "auto (data/sustained/<hardware>.json where shipped) or none");
  cmd->add_option("--host", args->host,
                  "Host costs of the eager steps: auto (data/hosts/<hardware>.json when shipped, "
                  "else today's constants, marked as a placeholder), none (today's constants) or "
                  "a host file (inferlab probe --host-only, with validation/host_dispatch.py's "
                  "figure merged)")
      ->capture_default_str();
  cmd->add_flag("--cases", args->cases, "Table: list every case, not only the summary");
  cmd->add_flag("--engine", args->engine,
                "Check `predict --framework inferlab` against the engine's own profiles "
                "(inferlab bench --profile): whole steps per switch combination and phase, and "
                "each kernel class");
  cmd->add_option("--max-mape", args->max_mape,
                  "Fail (exit 1) when a group's MAPE exceeds its bound, e.g. "
                  "decode_graph=0.15,gemm=0.12; with --engine prefill=0.05,decode=0.05 (every "
                  "switch combination's phase) or a kernel class, gemm_qkv=0.1");
  cmd->callback([args] { run_validate(*args); });
}

}  // namespace inferlab::cli
