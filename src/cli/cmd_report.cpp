#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "cli/predict_run.hpp"
#include "cli/serve_args.hpp"
#include "cli/slo_grammar.hpp"
#include "fit/validation.hpp"
#include "report/emit.hpp"
#include "report/html_report_predict.hpp"
#include "report/html_report_serve.hpp"
#include "report/html_report_validate.hpp"
#include "serve/capacity.hpp"
#include "serve/serving_setup.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab::cli {

namespace {

struct ReportArgs {
  CommonArgs common;
  ServeArgs serve;
  std::string kind, out, slo, data, split = "all";
  int64_t batch = 1, input = 512, output = 128;
  // Options that belong to one kind only (long names), for the "does not apply" check.
  std::set<std::string> model_options, predict_options, serve_options, validate_options;
};

// The long names of the options added since `before` options existed.
std::set<std::string> options_since(const CLI::App* cmd, size_t before) {
  std::set<std::string> names;
  const auto options = cmd->get_options();
  for (size_t i = before; i < options.size(); ++i) {
    for (const auto& name : options[i]->get_lnames()) names.insert("--" + name);
  }
  return names;
}

void reject_foreign_options(const CLI::App* cmd, const ReportArgs& a) {
  auto check = [&](const std::set<std::string>& names, std::set<std::string> kinds) {
    if (kinds.count(a.kind)) return;
    for (const auto& name : names) {
      if (cmd->count(name) > 0) {
        std::string list;
        for (const auto& k : kinds) list += (list.empty() ? "" : " or ") + k;
        throw InputError(name + " applies to --kind " + list + ", not to --kind " + a.kind);
      }
    }
  };
  check(a.model_options, {"predict", "serve"});
  check(a.predict_options, {"predict"});
  check(a.serve_options, {"serve"});
  check(a.validate_options, {"validate"});
}

// predict and serve apply the GPU's shipped sustained clock unless --sustained says otherwise
// (as the commands do); validate keeps the calibration's (as `validate` does).
CommonArgs with_sustained_default(const CommonArgs& common) {
  CommonArgs c = common;
  if (c.sustained.empty()) c.sustained = kSustainedAuto;
  return c;
}

HtmlPage predict_page(const ReportArgs& a) {
  const PredictRun run =
      run_prediction(with_sustained_default(a.common), a.batch, a.input, a.output);
  const PredictOptions& o = run.options;
  PredictReportInput in;
  in.model = run.model.name;
  in.hardware = &run.hw.spec;
  in.cost_model = run.hw.cost->name();
  in.cost_source = run.hw.source;
  in.batch = a.batch;
  in.input_tokens = a.input;
  in.output_tokens = a.output;
  in.settings = fmt::format(
      "weights {}, activations {}, KV {}; {} kernels, CUDA graphs {}, FlashAttention {}, TP {}",
      dtype_name(run.precision.weights), dtype_name(run.precision.activations),
      dtype_name(run.precision.kv), framework_name(o.framework), o.cuda_graphs ? "on" : "off",
      o.flash_attention ? "on" : "off", o.tp);
  in.settings += "; sustained clock: " + run.hw.sustained.note;
  in.prediction = &run.prediction;
  return predict_html_page(in);
}

HtmlPage serve_page(const ReportArgs& a) {
  ModelConfig model = load_model(a.common.model);
  LoadedHardware hw = load_cost_model(with_sustained_default(a.common));
  PredictOptions o = to_predict_options(a.common);
  SchedulerConfig scheduler = make_scheduler_config(a.serve, model.max_position_embeddings);
  const std::unique_ptr<ModelConfig> draft = load_draft_model(a.serve);
  SloTargets slo;
  if (!a.slo.empty()) {
    const CapacitySlo targets = parse_capacity_slo(a.slo);
    slo.ttft_s = targets.ttft_p99_s;
    slo.tpot_s = targets.tpot_p99_s;
  }
  std::vector<ServeRequest> requests = make_workload(a.serve, a.serve.rate);
  const KvBudget kv = size_kv_cache(scheduler, model, hw.spec, o);
  const std::string title =
      fmt::format("{} served on {} (TP {})", model.name, hw.spec.display_name, o.tp);
  const std::string workload =
      a.serve.trace.empty()
          ? fmt::format("{} requests at {:g} req/s ({} arrivals), prompts {}, outputs {}",
                        requests.size(), a.serve.rate, a.serve.arrival, a.serve.input_dist,
                        a.serve.output_dist)
          : fmt::format("{} requests from {}", requests.size(), a.serve.trace);
  std::string subtitle = fmt::format(
      "inferlab serve: {}; policy {}, max {} seqs, {} batched tokens, prefix caching {}; {} "
      "cost model; sustained clock: {}",
      workload, schedule_policy_name(scheduler.policy), scheduler.max_num_seqs,
      scheduler.max_num_batched_tokens, scheduler.prefix_caching ? "on" : "off", hw.cost->name(),
      hw.sustained.note);
  if (!kv.fits()) {
    return serve_not_fitting_page(title, subtitle, kv.weights_bytes, kv.activations_bytes,
                                  kv.usable_bytes);
  }
  PredictedIterationCost cost(model, hw.spec, *hw.cost, o, load_host_overhead(), draft.get());
  const ServeResult result = simulate_serving(requests, scheduler, cost);
  const ServeSummary summary = summarize(result, slo);
  ServeReportInput in{title, subtitle, &result, &summary, scheduler.block_size, !a.slo.empty()};
  return serve_html_page(in);
}

HtmlPage validate_page(const ReportArgs& a) {
  if (a.data.empty()) {
    throw InputError(
        "--kind validate needs --data FILE (a reference JSON from "
        "validation/torch_reference.py, or a hardware profile)");
  }
  SplitFilter split = parse_split_filter(a.split);
  auto reference = read_json_file(a.data, "measured reference");
  LoadedHardware hw = load_cost_model(a.common);
  IsolatedOpTime isolated = isolated_time_for(hw);
  const HostOverhead host = host_overhead_for(hw.spec.name);
  ValidationReport report =
      validate_against_reference(reference, "measured reference '" + a.data + "'", *hw.cost,
                                 hw.factors.kernel_latency_s, host, isolated, split);
  if (report.cases.empty()) {
    throw InputError("'" + a.data + "' has no cases for --split " + a.split);
  }
  ValidateReportInput in{
      fmt::format("Predicted vs measured on {}", hw.spec.display_name),
      fmt::format("inferlab validate: {} ({} cases, split {}); {} cost model",
                  std::filesystem::path(a.data).filename().string(), report.cases.size(), a.split,
                  hw.cost->name()),
      fmt::format("Data: {}. Cost model: {} ({}). Ceilings: {}. Host: {}.", a.data, hw.cost->name(),
                  hw.source, hw.spec.ceiling_source(), host.host_source),
      &report};
  return validate_html_page(in);
}

}  // namespace

void register_report(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Write one self-contained HTML page (charts and tables, nothing fetched when viewed) for "
      "a prediction, a serving simulation or a validation");
  cmd->add_option("--kind", args->kind, "predict, serve or validate")->required();
  cmd->add_option("--out", args->out, "HTML file to write")->required();
  add_format_option(cmd, args->common);
  add_hardware_options(cmd, args->common);
  cmd->add_option("--sustained", args->common.sustained,
                  "Calibrated model's clock under sustained load, as the commands take it: auto, "
                  "none or a measurement file (default: auto for predict and serve, the "
                  "calibration's own for validate)");
  size_t before = cmd->get_options().size();
  add_model_options(cmd, args->common);
  args->model_options = options_since(cmd, before);
  before = cmd->get_options().size();
  cmd->add_option("--batch", args->batch, "predict: sequences per batch")->capture_default_str();
  cmd->add_option("--input", args->input, "predict: prompt tokens per sequence")
      ->capture_default_str();
  cmd->add_option("--output", args->output, "predict: generated tokens per sequence")
      ->capture_default_str();
  args->predict_options = options_since(cmd, before);
  before = cmd->get_options().size();
  add_serve_options(cmd, args->serve, true);
  cmd->add_option("--slo", args->slo,
                  "serve: per-request targets for goodput: ttft_p99=MS,tpot_p99=MS");
  args->serve_options = options_since(cmd, before);
  before = cmd->get_options().size();
  cmd->add_option("--data", args->data,
                  "validate: reference JSON (validation/torch_reference.py output) or a hardware "
                  "profile");
  cmd->add_option("--split", args->split, "validate: all, fit or holdout")->capture_default_str();
  args->validate_options = options_since(cmd, before);
  cmd->callback([args, cmd] {
    const auto& a = *args;
    OutputFormat format = parse_output_format(a.common.format);
    if (a.kind != "predict" && a.kind != "serve" && a.kind != "validate") {
      throw InputError("unknown --kind '" + a.kind + "'; known: predict, serve, validate");
    }
    reject_foreign_options(cmd, a);
    const HtmlPage page = a.kind == "predict" ? predict_page(a)
                          : a.kind == "serve" ? serve_page(a)
                                              : validate_page(a);
    const std::string html = render_html_page(page);
    std::ofstream file(a.out, std::ios::binary);
    if (!file || !(file << html) || !file.flush()) {
      throw InputError(fmt::format("cannot write --out '{}': {}", a.out, std::strerror(errno)));
    }
    Table table({"kind", "html", "bytes"});
    table.add_row({a.kind, a.out, std::to_string(html.size())});
    emit({{"kind", a.kind}, {"html", a.out}, {"bytes", html.size()}},
         fmt::format("{} report written to {} ({} KB)\n", a.kind, a.out, html.size() / 1024),
         table.to_csv(), format);
  });
}

}  // namespace inferlab::cli
