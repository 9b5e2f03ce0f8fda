#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "cli/field_grammar.hpp"
#include "predict/validity.hpp"
#include "report/emit.hpp"
#include "report/prediction_report.hpp"

namespace inferlab::cli {

namespace {
struct PredictArgs {
  CommonArgs common;
  int64_t batch = 1, input = 512, output = 128;
};
}  // namespace

void register_predict(CLI::App& app) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App* cmd = app.add_subcommand(
      "predict",
      "Latency, throughput and memory of one batch of requests, with a per-operator "
      "breakdown of prefill and decode");
  add_model_options(cmd, args->common);
  add_hardware_options(cmd, args->common);
  add_format_option(cmd, args->common);
  cmd->add_option("--batch", args->batch, "Sequences per batch")->capture_default_str();
  cmd->add_option("--input", args->input, "Prompt tokens per sequence")->capture_default_str();
  cmd->add_option("--output", args->output, "Generated tokens per sequence")->capture_default_str();
  cmd->callback(naming_flags([args] {
    const auto& a = *args;
    OutputFormat format = parse_output_format(a.common.format);
    ModelConfig model = load_model(a.common.model);
    LoadedHardware hw = load_cost_model(a.common);
    PredictOptions o = to_predict_options(a.common);
    o.batch = a.batch;
    o.input_tokens = a.input;
    o.output_tokens = a.output;
    HostOverhead host = load_host_overhead();
    StepContext context = make_step_context(model, hw.spec, *hw.cost, o, host);
    RequestPrediction r = predict_request(model, hw.spec, *hw.cost, o, host);
    const RequestSetupView setup{
        model.name,
        hw.spec,
        hw.cost->name(),
        hw.source,
        o,
        context.precision,
        unvalidated_paths(model, o, context.precision, hw.spec, hw.cost->name())};
    nlohmann::json out = request_setup_json(setup);
    out.update(request_to_json(r));
    emit(out, request_text(setup, r), request_csv(r), format);
  }));
}

}  // namespace inferlab::cli
