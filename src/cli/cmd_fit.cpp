#include <fmt/format.h>

#include <optional>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "fit/fit_engine.hpp"
#include "fit/fit_run.hpp"
#include "report/emit.hpp"
#include "report/engine_validation_report.hpp"
#include "report/fit_report.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {
struct FitArgs {
  CommonArgs common;
  std::vector<std::string> data;
  std::string out, sustained;
  bool engine = false;
  double decode_cta_gbps = 0.0;           // --engine: EngineCosts::decode_cta_bps / 1e9
  double sync_pass_us = 0.0;              // --engine: EngineCosts::sync_pass_s x 1e6
  double switch_layer_us = 0.0;           // --engine: EngineCosts::model_switch_per_layer_s x 1e6
  std::optional<double> combine_trip_us;  // --engine: every decode key's combine_trip_s x 1e6
  std::string base;                       // --engine --base: a calibration to extend
};

// Whether any of the four engine constants measured apart from the profiles is given.
bool gives_measured_constants(const FitArgs& a) {
  return a.decode_cta_gbps != 0.0 || a.sync_pass_us != 0.0 || a.switch_layer_us != 0.0 ||
         a.combine_trip_us.has_value();
}

// Each measured constant in its range, before any file is read or fitted.
void check_measured_constants(const FitArgs& a) {
  if (!(a.decode_cta_gbps >= 0.0 && a.decode_cta_gbps <= 1e4)) {
    throw InputError("--decode-cta-gbps must be in [0, 10000]");
  }
  if (!(a.sync_pass_us >= 0.0 && a.sync_pass_us <= 1000.0)) {
    throw InputError("--sync-pass-us must be in [0, 1000]");
  }
  if (!(a.switch_layer_us >= 0.0 && a.switch_layer_us <= 1000.0)) {
    throw InputError("--model-switch-us-per-layer must be in [0, 1000]");
  }
  if (a.combine_trip_us && !(*a.combine_trip_us >= 0.0 && *a.combine_trip_us <= 1000.0)) {
    throw InputError("--combine-trip-us must be in [0, 1000]");
  }
}

// --engine: the engine's calibration from its own profiles (fit split only). The hardware and
// its ceilings are the profiles' (all must agree), with --profile choosing the ceilings.
// --engine --base FILE: FILE extended by the kernels the profiles measure and it lacks; its own
// keys and step constants kept (fit_engine.hpp's extend_engine_costs).
void run_engine_extension(const FitArgs& a, OutputFormat format) {
  if (gives_measured_constants(a)) {
    throw InputError(
        "fit --engine --base keeps the base's step constants: drop "
        "--decode-cta-gbps, --sync-pass-us, --model-switch-us-per-layer and --combine-trip-us");
  }
  const EngineCosts base_costs = load_engine_costs_file(a.base);
  const auto profiles = load_engine_profiles(a.data);
  const std::string hardware = common_hardware(profiles);
  if (hardware != base_costs.hardware) {
    throw InputError("fit --engine --base: the profiles are of " + hardware + ", the base of " +
                     base_costs.hardware);
  }
  CommonArgs base = a.common;
  base.hardware = hardware;
  base.framework = "vllm";  // the fallback: today's model, not engine costs
  base.engine_costs = "auto";
  const LoadedHardware fallback = load_cost_model(base);
  EngineFit fit = extend_engine_costs(base_costs, profiles, fallback.spec, *fallback.cost);
  fit.costs.source += fmt::format(
      "; then extended by `inferlab fit --engine --base {} --data {}`: {} kernel keys from {} "
      "fit points of {} engine profiles ({} held-out points not used), the base's keys and step "
      "constants kept",
      a.base, join_names(a.data, " "), fit.costs.fit_summary["extensions"].back()["keys"].size(),
      fit.fit_points, profiles.size(), fit.held_out_points);
  if (!a.out.empty()) write_engine_costs_file(a.out, fit.costs);
  emit(engine_costs_to_json(fit.costs), engine_fit_text(fit), engine_fit_csv(fit), format);
}

void run_engine_fit(const FitArgs& a, OutputFormat format) {
  if (!a.sustained.empty()) throw InputError("--sustained is for --cost calibrated, not --engine");
  if (!a.base.empty()) return run_engine_extension(a, format);
  check_measured_constants(a);
  const auto profiles = load_engine_profiles(a.data);
  const std::string hardware = common_hardware(profiles);
  CommonArgs base = a.common;
  base.hardware = hardware;
  base.framework = "vllm";  // the fallback: today's model, not engine costs
  base.engine_costs = "auto";
  const LoadedHardware fallback = load_cost_model(base);
  EngineKernelPrior prior;  // a trip's cost fitted unless measured
  if (a.combine_trip_us) prior.combine_trip_s = *a.combine_trip_us * 1e-6;
  EngineFit fit = fit_engine_costs(profiles, fallback.spec, *fallback.cost, prior);
  fit.costs.decode_cta_bps = a.decode_cta_gbps * 1e9;
  fit.costs.sync_pass_s = a.sync_pass_us * 1e-6;
  fit.costs.model_switch_per_layer_s = a.switch_layer_us * 1e-6;
  fit.costs.source = "inferlab fit --engine --profile " + a.common.profile + " --data " +
                     join_names(a.data, " ") + ": " + fit.costs.source +
                     "; classes never profiled fall back to the " + fallback.cost->name() +
                     " model";
  // The constants measured apart from the profiles, with where they came from.
  if (a.decode_cta_gbps > 0.0) {
    fit.costs.source += fmt::format(
        "; steps.decode_cta_bps ({:g} GB/s) from --decode-cta-gbps: measured by "
        "validation/fit_decode_straggler.py, not by this fit",
        a.decode_cta_gbps);
  }
  if (a.sync_pass_us > 0.0) {
    fit.costs.source += fmt::format(
        "; steps.sync_pass_s ({:g} us) from --sync-pass-us: measured by `bench --speculative` "
        "(host wall minus device time a pass, validation/sync_pass.py), not by this fit",
        a.sync_pass_us);
  }
  if (a.combine_trip_us) {
    fit.costs.source += fmt::format(
        "; the flash decode's combine_trip_s ({:g} us) from --combine-trip-us: measured by "
        "validation/engine_ab.py on each side of a context bucket (MEASUREMENTS section 60), not "
        "by this fit",
        *a.combine_trip_us);
  }
  if (a.switch_layer_us > 0.0) {
    fit.costs.source += fmt::format(
        "; steps.model_switch_per_layer_s ({:g} us) from --model-switch-us-per-layer: measured "
        "by `bench --speculative draft=...` (its rounds against the passes alone, "
        "validation/sync_pass.py), not by this fit",
        a.switch_layer_us);
  }
  if (!a.out.empty()) write_engine_costs_file(a.out, fit.costs);
  emit(engine_costs_to_json(fit.costs), engine_fit_text(fit), engine_fit_csv(fit), format);
}

void run_fit(const FitArgs& a) {
  OutputFormat format = parse_output_format(a.common.format);
  if (a.engine) return run_engine_fit(a, format);
  if (gives_measured_constants(a) || !a.base.empty()) {
    throw InputError(
        "--decode-cta-gbps, --sync-pass-us, --model-switch-us-per-layer, --combine-trip-us and "
        "--base are for fit --engine");
  }
  if (a.data.size() > 1) {
    throw InputError("fit takes one --data reference file (several only with --engine)");
  }
  const std::string data = a.data.empty() ? std::string() : a.data.front();
  // Ceilings: the measured profile when one is used (its sweeps are fitted too), else the
  // spec sheet. The fit is relative to whichever ceilings the model will use.
  HardwareSpec hw = load_hardware(a.common.hardware, a.common.profile);
  const FitInputs inputs = gather_fit_inputs(hw, data);
  const FitRequest request{a.common.profile, data, a.sustained};
  if (a.common.cost == cost_method_name(CostMethod::calibrated)) {
    CalibratedFit fit = run_calibrated_fit(hw, inputs, request);
    if (!a.out.empty()) write_calibrated_params_file(a.out, fit.params);
    emit(calibrated_params_to_json(fit.params), calibrated_fit_text(fit),
         calibrated_fit_table(fit).to_csv(), format);
    return;
  }
  if (a.common.cost != cost_method_name(CostMethod::roofline) &&
      a.common.cost != cost_method_name(CostMethod::auto_)) {
    throw InputError("fit --cost takes roofline (delay factors) or calibrated, got '" +
                     a.common.cost + "'");
  }
  DelayFactorFit fit = run_delay_factor_fit(hw, inputs, request);
  if (!a.out.empty()) write_delay_factors_file(a.out, fit.factors, class_fit_summary(fit));
  emit(delay_factors_to_json(fit.factors, class_fit_summary(fit)), delay_factor_fit_table(fit),
       format);
}
}  // namespace

void register_fit(CLI::App& app) {
  auto args = std::make_shared<FitArgs>();
  CLI::App* cmd = app.add_subcommand(
      "fit",
      "Fit the cost model to measured operators (validation/torch_reference.py): --cost "
      "roofline fits delay factors, --cost calibrated the calibrated model; --engine fits the "
      "inferlab engine's own costs to its profiles (inferlab bench --profile)");
  add_hardware_options(cmd, args->common);
  add_format_option(cmd, args->common);
  cmd->add_option("--data", args->data,
                  "Operators measured with PyTorch (validation/torch_reference.py output); with "
                  "--engine, one or more engine profiles (fit split only)");
  cmd->add_option("--out", args->out,
                  "Write the fitted file (data/delay_factors/, data/calibrated/ or, with --engine, "
                  "data/engine_costs/ form)");
  cmd->add_option("--sustained", args->sustained,
                  "With --cost calibrated: GEMM clock under sustained load "
                  "(validation/sustained_clock.py output)");
  cmd->add_flag("--engine", args->engine,
                "Fit the inferlab engine's costs (--framework inferlab) to engine profiles");
  cmd->add_option("--sync-pass-us", args->sync_pass_us,
                  "With --engine: microseconds a forward pass the host waits for adds to its "
                  "device time (launch, upload, copy back; measured by validation/sync_pass.py "
                  "from `bench --speculative`; 0: not priced)");
  cmd->add_option("--model-switch-us-per-layer", args->switch_layer_us,
                  "With --engine: microseconds a layer that a model's first pass after another "
                  "model's costs more (speculation with a draft model; measured by "
                  "validation/sync_pass.py from `bench --speculative draft=...`; 0: not priced)");
  cmd->add_option("--base", args->base,
                  "With --engine: extend this calibration (a data/engine_costs/ file) by the "
                  "kernels the --data profiles measure and it lacks, keeping its own keys and "
                  "step constants");
  cmd->add_option(
      "--combine-trip-us", args->combine_trip_us,
      "With --engine: microseconds each further trip of the flash decode's combine "
      "costs (a decode step on each side of a context bucket, validation/engine_ab.py); "
      "kept for every decode key instead of fitted");
  cmd->add_option("--decode-cta-gbps", args->decode_cta_gbps,
                  "With --engine: GB/s one flash-decode CTA streams alone, which prices the "
                  "longest sequence of a decode batch of unequal contexts (measured by "
                  "validation/fit_decode_straggler.py; 0: not priced)");
  cmd->callback([args] { run_fit(*args); });
}

}  // namespace inferlab::cli
