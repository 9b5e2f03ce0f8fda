#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "cli/predict_run.hpp"
#include "cost/engine/engine_cost.hpp"
#include "predict/validity.hpp"
#include "report/emit.hpp"
#include "report/prediction_report.hpp"

namespace inferlab::cli {

namespace {
struct PredictArgs {
  CommonArgs common;
  int64_t batch = 1, input = 512, output = 128;
};

// What the prediction rests on that nothing measured; with the engine's calibration, also the
// engine kernels it has not fitted as such.
std::vector<std::string> prediction_notes(const PredictRun& run) {
  auto notes =
      unvalidated_paths(run.model, run.options, run.precision, run.hw.spec, run.hw.cost->name());
  if (const auto* engine = dynamic_cast<const EngineCostModel*>(run.hw.cost.get())) {
    std::vector<Op> ops;
    for (const auto* step : {&run.prediction.prefill, &run.prediction.first_decode}) {
      for (const auto& p : step->ops) ops.push_back(p.op);
    }
    const auto keys = engine->unfitted_keys(ops);
    if (!keys.empty()) {
      notes.push_back("the engine's calibration has not fitted " + join_names(keys, "; "));
    }
  }
  return notes;
}
}  // namespace

void register_predict(CLI::App& app) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App* cmd = app.add_subcommand(
      "predict",
      "Latency, throughput and memory of one batch of requests, with a per-operator "
      "breakdown of prefill and decode");
  add_model_options(cmd, args->common);
  add_hardware_options(cmd, args->common);
  add_sustained_option(cmd, args->common);
  add_format_option(cmd, args->common);
  cmd->add_option("--batch", args->batch, "Sequences per batch")->capture_default_str();
  cmd->add_option("--input", args->input, "Prompt tokens per sequence")->capture_default_str();
  cmd->add_option("--output", args->output, "Generated tokens per sequence")->capture_default_str();
  cmd->callback([args] {
    const auto& a = *args;
    OutputFormat format = parse_output_format(a.common.format);
    const PredictRun run = run_prediction(a.common, a.batch, a.input, a.output);
    const std::string cost_name = run.hw.cost->name();
    const RequestSetupView setup{
        run.model.name,
        run.hw.spec,
        cost_name,
        run.hw.engine_costs_source.empty()
            ? run.hw.source
            : "engine costs " + run.hw.engine_costs_source + "; other ops: " + run.hw.source,
        run.options,
        run.precision,
        prediction_notes(run),
        run.hw.sustained};
    nlohmann::json out = request_setup_json(setup);
    out.update(request_to_json(run.prediction));
    emit(out, request_text(setup, run.prediction), request_csv(run.prediction), format);
  });
}

}  // namespace inferlab::cli
