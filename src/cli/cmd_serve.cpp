#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "cli/serve_args.hpp"
#include "cli/slo_grammar.hpp"
#include "report/emit.hpp"
#include "report/serve_report.hpp"
#include "serve/capacity.hpp"
#include "serve/metrics.hpp"
#include "serve/serving_setup.hpp"

namespace inferlab::cli {

namespace {
struct ServeCommandArgs {
  CommonArgs common;
  ServeArgs serve;
  std::string slo, requests_csv, iterations_csv, svg_prefix;
};

// --slo sets the goodput targets; without it every finished request counts.
SloTargets goodput_slo(const std::string& text) {
  SloTargets slo;
  if (!text.empty()) {
    const CapacitySlo targets = parse_capacity_slo(text);
    slo.ttft_s = targets.ttft_p99_s;
    slo.tpot_s = targets.tpot_p99_s;
  }
  return slo;
}

// --requests-csv, --iterations-csv and --svg-prefix, where given.
void write_serve_files(const ServeCommandArgs& a, const ServeResult& result,
                       const std::string& title) {
  if (!a.requests_csv.empty()) {
    open_output(a.requests_csv, "--requests-csv") << serve_requests_csv(result);
  }
  if (!a.iterations_csv.empty()) {
    open_output(a.iterations_csv, "--iterations-csv") << serve_iterations_csv(result);
  }
  if (a.svg_prefix.empty()) return;
  for (const auto& [suffix, chart] : serve_charts(result, title)) {
    open_output(a.svg_prefix + suffix, "--svg-prefix") << render_xy_chart_svg(chart);
  }
}
}  // namespace

void register_serve(CLI::App& app) {
  auto args = std::make_shared<ServeCommandArgs>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Simulate a vLLM-style server over a request stream: iteration-level scheduling, paged "
      "KV cache, preemption, prefix caching, speculative decoding; latency percentiles and "
      "throughput");
  add_model_options(cmd, args->common);
  add_hardware_options(cmd, args->common);
  add_format_option(cmd, args->common);
  add_serve_options(cmd, args->serve, true);
  cmd->add_option("--slo", args->slo,
                  "Per-request targets for goodput: ttft_p99=MS,tpot_p99=MS (ms, or 's' unit)");
  cmd->add_option("--requests-csv", args->requests_csv, "Write one row per request here");
  cmd->add_option("--iterations-csv", args->iterations_csv, "Write one row per iteration here");
  cmd->add_option("--svg-prefix", args->svg_prefix,
                  "Write PREFIX-ttft-cdf.svg, PREFIX-tpot-cdf.svg and PREFIX-kv.svg");
  cmd->callback([args] {
    const auto& a = *args;
    OutputFormat format = parse_output_format(a.common.format);
    ModelConfig model = load_model(a.common.model);
    LoadedHardware hw = load_cost_model(a.common);
    PredictOptions o = to_predict_options(a.common);
    EngineConfig engine = make_engine_config(a.serve);
    const std::unique_ptr<ModelConfig> draft = load_draft_model(a.serve);
    const SloTargets slo = goodput_slo(a.slo);
    std::vector<ServeRequest> requests = make_workload(a.serve, a.serve.rate);
    const KvBudget kv = size_kv_cache(engine, model, hw.spec, o);
    const ServeSetupView setup{model, hw.spec, hw.cost->name(), o.tp, engine, kv};
    if (!kv.fits()) {  // not fitting is a result: say so with the numbers
      const std::string text = serve_not_fitting_text(setup);
      emit(serve_setup_json(setup), text, text, format);
      return;
    }
    PredictedIterationCost cost(model, hw.spec, *hw.cost, o, load_host_overhead(), draft.get());
    const ServeResult result = run_engine(requests, engine, cost);
    const ServeSummary s = summarize(result, slo);
    write_serve_files(a, result,
                      fmt::format("{} on {}, {}", model.name, hw.spec.name, engine.max_num_seqs));
    emit(serve_json(setup, s), serve_text(setup, s), serve_latency_table(s).to_csv(), format);
  });
}

}  // namespace inferlab::cli
