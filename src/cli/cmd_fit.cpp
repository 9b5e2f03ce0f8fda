#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "fit/fit_run.hpp"
#include "report/emit.hpp"
#include "report/fit_report.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {
struct FitArgs {
  CommonArgs common;
  std::string data, out, sustained;
};

void run_fit(const FitArgs& a) {
  OutputFormat format = parse_output_format(a.common.format);
  // Ceilings: the measured profile when one is used (its sweeps are fitted too), else the
  // spec sheet. The fit is relative to whichever ceilings the model will use.
  HardwareSpec hw = load_hardware(a.common.hardware, a.common.profile);
  const FitInputs inputs = gather_fit_inputs(hw, a.data);
  const FitRequest request{a.common.profile, a.data, a.sustained};
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
      "roofline fits delay factors, --cost calibrated the calibrated model");
  add_hardware_options(cmd, args->common);
  add_format_option(cmd, args->common);
  cmd->add_option("--data", args->data,
                  "Operators measured with PyTorch (validation/torch_reference.py output)");
  cmd->add_option("--out", args->out,
                  "Write the fitted file (data/delay_factors/ or data/calibrated/ form)");
  cmd->add_option("--sustained", args->sustained,
                  "With --cost calibrated: GEMM clock under sustained load "
                  "(validation/sustained_clock.py output)");
  cmd->callback([args] { run_fit(*args); });
}

}  // namespace inferlab::cli
