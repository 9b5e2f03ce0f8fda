#include <fmt/format.h>

#include <iostream>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "predict/request_predictor.hpp"
#include "report/prediction_report.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {
struct StepArgs {
  CommonArgs common;
  std::string phase;
  int64_t batch = 1, tokens = 0, context = 0;
};
}  // namespace

void register_step(CLI::App& app) {
  auto args = std::make_shared<StepArgs>();
  CLI::App* cmd = app.add_subcommand(
      "step", "One prefill step (--tokens) or one decode step (--context), per operator");
  add_model_options(cmd, args->common);
  add_hardware_options(cmd, args->common);
  add_format_option(cmd, args->common);
  cmd->add_option("--phase", args->phase, "prefill or decode")->required();
  cmd->add_option("--batch", args->batch, "Sequences in the step")->capture_default_str();
  cmd->add_option("--tokens", args->tokens, "Prefill: new tokens per sequence");
  cmd->add_option("--context", args->context,
                  "Decode: tokens attended per sequence, the new one included");
  cmd->callback([args] {
    const auto& a = *args;
    OutputFormat format = parse_output_format(a.common.format);
    const StepShape shape = parse_step_shape(a.phase, a.batch, a.tokens, a.context);
    ModelConfig model = load_model(a.common.model);
    LoadedHardware hw = load_cost_model(a.common);
    PredictOptions o = to_step_options(a.common, shape);
    StepContext context = make_step_context(model, hw.spec, *hw.cost, o, load_host_overhead());
    StepPrediction step = predict_step(context, shape);
    if (format == OutputFormat::json) {
      nlohmann::json out = step_to_json(step);
      out["model"] = model.name;
      out["hardware"] = hw.spec.name;
      out["hardware_source"] = hw.spec.ceiling_source();
      out["phase"] = a.phase;
      out["batch"] = a.batch;
      out[a.phase == "prefill" ? "tokens" : "context"] = shape.context;
      print_json(out);
    } else if (format == OutputFormat::csv) {
      std::cout << step_csv_table(step, a.phase).to_csv();
    } else {
      std::cout << fmt::format("{} step of {} on {}: batch {}, {} {}: {} ms ({} kernels)\n\n",
                               a.phase, model.name, hw.spec.display_name, a.batch,
                               a.phase == "prefill" ? "tokens" : "context", shape.context,
                               format_ms(step.time_s), step.kernels)
                << step_table(step).to_text();
    }
  });
}

}  // namespace inferlab::cli
