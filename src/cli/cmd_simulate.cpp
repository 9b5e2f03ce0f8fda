#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "predict/simulation.hpp"
#include "report/emit.hpp"
#include "report/simulate_report.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {
struct SimulateArgs {
  CommonArgs common;
  std::string phase;
  int64_t batch = 1, tokens = 0, context = 0;
  int devices = 1, pp = 1;
};

void run_simulate(SimulateArgs a) {
  OutputFormat format = parse_output_format(a.common.format);
  const StepShape shape = parse_step_shape(a.phase, a.batch, a.tokens, a.context);
  if (a.devices < 1 || a.pp < 1) throw InputError("--devices and --pp must be at least 1");
  // --tp defaults to what the devices leave after the pipeline stages.
  if (a.common.tp == 1 && a.devices > a.pp) a.common.tp = a.devices / a.pp;
  if (a.common.tp * a.pp != a.devices) {
    throw InputError(
        fmt::format("--devices {} must equal --tp {} x --pp {}", a.devices, a.common.tp, a.pp));
  }
  ModelConfig model = load_model(a.common.model);
  LoadedTileSim hw = load_tilesim(a.common.hardware);
  PredictOptions o = to_step_options(a.common, shape);
  SimulationResult r = simulate_step(*hw.cost, hw.spec, model, shape, o, a.pp);
  // The same step with attention in the other form: FlashAttention tiles against the
  // unfused score matrix written to and read back from memory.
  PredictOptions other = o;
  other.flash_attention = !o.flash_attention;
  const double other_s = simulate_step(*hw.cost, hw.spec, model, shape, other, a.pp).time_s;
  SimulateRun run{model.name,
                  hw.spec.name,
                  hw.spec.display_name,
                  a.devices,
                  a.common.tp,
                  a.pp,
                  a.phase,
                  a.batch,
                  shape.context,
                  &r,
                  o.flash_attention ? r.time_s : other_s,
                  o.flash_attention ? other_s : r.time_s};
  emit(simulate_json(run), simulate_text(run), simulate_csv(run), format);
}
}  // namespace

void register_simulate(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "simulate",
      "One LLM step on a hardware template (data/templates/): the mapping chosen for every "
      "operator and where the time goes");
  add_model_options(cmd, args->common);
  add_format_option(cmd, args->common);
  cmd->add_option("--hardware", args->common.hardware, "Hardware template")->capture_default_str();
  cmd->add_option("--devices", args->devices, "Devices used (tp x pp)")->capture_default_str();
  cmd->add_option("--pp", args->pp, "Pipeline-parallel stages")->capture_default_str();
  cmd->add_option("--phase", args->phase, "prefill or decode")->required();
  cmd->add_option("--batch", args->batch, "Sequences in the step")->capture_default_str();
  cmd->add_option("--tokens", args->tokens, "Prefill: new tokens per sequence");
  cmd->add_option("--context", args->context, "Decode: tokens attended per sequence");
  cmd->callback([args] { run_simulate(*args); });
}

}  // namespace inferlab::cli
