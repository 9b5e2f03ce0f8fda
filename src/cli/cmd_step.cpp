#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "predict/request_predictor.hpp"
#include "report/emit.hpp"
#include "report/step_report.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {
struct StepArgs {
  CommonArgs common;
  std::string phase;
  int64_t batch = 1, tokens = 0, context = 0;
};

void run_step(const StepArgs& a) {
  OutputFormat format = parse_output_format(a.common.format);
  const StepShape shape = parse_step_shape(a.phase, a.batch, a.tokens, a.context);
  ModelConfig model = load_model(a.common.model);
  LoadedHardware hw = load_cost_model(a.common);
  PredictOptions o = to_step_options(a.common, shape);
  StepContext context = make_step_context(model, hw.spec, *hw.cost, o, load_host_overhead());
  context.price_isolated = true;  // per-op rows carry isolated_ms
  StepPrediction step = predict_step(context, shape);
  StepRun run{model.name,  hw.spec.name, hw.spec.display_name, hw.spec.ceiling_source(),
              a.phase,     a.batch,      shape.context,        &step,
              hw.sustained};
  emit(step_report_json(run), step_report_text(run), step_report_csv(run), format);
}
}  // namespace

void register_step(CLI::App& app) {
  auto args = std::make_shared<StepArgs>();
  CLI::App* cmd = app.add_subcommand(
      "step", "One prefill step (--tokens) or one decode step (--context), per operator");
  add_model_options(cmd, args->common);
  add_hardware_options(cmd, args->common);
  add_sustained_option(cmd, args->common);
  add_format_option(cmd, args->common);
  cmd->add_option("--phase", args->phase, "prefill or decode")->required();
  cmd->add_option("--batch", args->batch, "Sequences in the step")->capture_default_str();
  cmd->add_option("--tokens", args->tokens, "Prefill: new tokens per sequence");
  cmd->add_option("--context", args->context,
                  "Decode: tokens attended per sequence, the new one included");
  cmd->callback([args] { run_step(*args); });
}

}  // namespace inferlab::cli
