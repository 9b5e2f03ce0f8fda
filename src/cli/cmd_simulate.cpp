#include <fmt/format.h>

#include <iostream>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "predict/simulation.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {
struct SimulateArgs {
  CommonArgs common;
  std::string phase;
  int64_t batch = 1, tokens = 0, context = 0;
  int devices = 1, pp = 1;
};

nlohmann::json op_to_json(const SimulatedOp& s) {
  const auto& b = s.breakdown;
  return {{"name", s.priced.op.name},
          {"kind", op_kind_name(s.priced.op.kind)},
          {"count", s.priced.op.count},
          {"ms_each", b.time_s * 1e3},
          {"ms_total", s.priced.total_s() * 1e3},
          {"bound", b.bound},
          {"mapping", b.mapping},
          {"compute_ms", b.compute_s * 1e3},
          {"vector_ms", b.vector_s * 1e3},
          {"local_ms", b.local_s * 1e3},
          {"global_buffer_ms", b.global_s * 1e3},
          {"memory_ms", b.memory_s * 1e3},
          {"communication_ms", b.communication_s * 1e3},
          {"fixed_ms", b.fixed_s * 1e3}};
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
  cmd->callback([args] {
    auto a = *args;
    OutputFormat format = parse_output_format(a.common.format);
    const StepShape shape = parse_step_shape(a.phase, a.batch, a.tokens, a.context);
    if (a.devices < 1 || a.pp < 1) throw InputError("--devices and --pp must be at least 1");
    // --tp defaults to what the devices leave after the pipeline stages.
    if (a.common.tp == 1 && a.devices > a.pp) a.common.tp = a.devices / a.pp;
    if (a.common.tp * a.pp != a.devices) {
      throw InputError(
          fmt::format("--devices {} must equal --tp {} x --pp {}", a.devices, a.common.tp, a.pp));
    }
    a.common.cost = "tilesim";
    ModelConfig model = load_model(a.common.model);
    LoadedHardware hw = load_cost_model(a.common);
    PredictOptions o = to_step_options(a.common, shape);
    SimulationResult r = simulate_step(*hw.tilesim, hw.spec, model, shape, o, a.pp);
    // The same step with attention in the other form: FlashAttention tiles against the
    // unfused score matrix written to and read back from memory.
    PredictOptions other = o;
    other.flash_attention = !o.flash_attention;
    const double other_s = simulate_step(*hw.tilesim, hw.spec, model, shape, other, a.pp).time_s;
    const double flash_s = o.flash_attention ? r.time_s : other_s;
    const double unfused_s = o.flash_attention ? other_s : r.time_s;
    std::map<std::string, double> by_bound;
    for (const auto& op : r.ops) by_bound[op.breakdown.bound] += op.priced.total_s() * 1e3;
    if (format == OutputFormat::json) {
      nlohmann::json ops = nlohmann::json::array();
      for (const auto& op : r.ops) ops.push_back(op_to_json(op));
      print_json({{"model", model.name},
                  {"hardware", hw.spec.name},
                  {"devices", a.devices},
                  {"tp", a.common.tp},
                  {"pp", a.pp},
                  {"phase", a.phase},
                  {"batch", a.batch},
                  {a.phase == "prefill" ? "tokens" : "context", shape.context},
                  {"ms", r.time_s * 1e3},
                  {"stage_ms", r.stage_s * 1e3},
                  {"per_layer_ms", r.per_layer_s * 1e3},
                  {"p2p_ms", r.p2p_s * 1e3},
                  {"attention_forms_ms", {{"flash", flash_s * 1e3}, {"unfused", unfused_s * 1e3}}},
                  {"layers_per_stage", r.layers_per_stage},
                  {"stage_time_by_bound_ms", by_bound},
                  {"memory",
                   {{"weights_per_device_bytes", r.weights_per_device_bytes},
                    {"kv_per_device_bytes", r.kv_per_device_bytes},
                    {"capacity_bytes", r.capacity_bytes},
                    {"fits", r.fits}}},
                  {"ops", ops}});
      return;
    }
    Table t({"op", "count", "ms_each", "bound", "mapping"});
    for (const auto& op : r.ops) {
      t.add_row({op.priced.op.name, std::to_string(op.priced.op.count),
                 fmt::format("{:.4f}", op.breakdown.time_s * 1e3), op.breakdown.bound,
                 op.breakdown.mapping});
    }
    if (format == OutputFormat::csv) {
      std::cout << t.to_csv();
      return;
    }
    std::cout << fmt::format(
                     "{} of {} on {} x {} (tp {}, pp {}): {} ms; one stage {} ms, {} layers; "
                     "memory per device {:.1f} of {:.1f} GB ({}); with FlashAttention {} ms, "
                     "unfused {} ms\n\n",
                     a.phase, model.name, a.devices, hw.spec.display_name, a.common.tp, a.pp,
                     format_ms(r.time_s), format_ms(r.stage_s), r.layers_per_stage,
                     (r.weights_per_device_bytes + r.kv_per_device_bytes) / 1e9,
                     r.capacity_bytes / 1e9, r.fits ? "fits" : "does not fit", format_ms(flash_s),
                     format_ms(unfused_s))
              << t.to_text();
  });
}

}  // namespace inferlab::cli
