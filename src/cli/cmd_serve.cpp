#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "cli/serve_args.hpp"
#include "predict/framework.hpp"
#include "report/xy_chart_svg.hpp"
#include "serve/capacity.hpp"
#include "serve/metrics.hpp"
#include "serve/serving_setup.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {
struct ServeCommandArgs {
  CommonArgs common;
  ServeArgs serve;
  std::string slo, requests_csv, iterations_csv, svg_prefix;
};

nlohmann::json stats_ms(const LatencyStats& s) {
  return {{"mean", s.mean_s * 1e3}, {"p50", s.p50_s * 1e3}, {"p90", s.p90_s * 1e3},
          {"p99", s.p99_s * 1e3},   {"max", s.max_s * 1e3}, {"count", s.count}};
}

std::ofstream open_output(const std::string& path, const char* flag) {
  std::ofstream out(path);
  if (!out) throw InputError(std::string("cannot write ") + flag + " file '" + path + "'");
  return out;
}

void write_requests_csv(const std::string& path, const ServeResult& r) {
  auto out = open_output(path, "--requests-csv");
  out << "id,arrival_s,first_token_s,finish_s,ttft_ms,tpot_ms,e2e_ms,prompt_tokens,output_tokens,"
         "prefix_hit_tokens,preemptions,rejected\n";
  for (size_t i = 0; i < r.requests.size(); ++i) {
    const auto& q = r.requests[i];
    out << fmt::format("{},{:.6f},{:.6f},{:.6f},{:.4f},{:.4f},{:.4f},{},{},{},{},{}\n", i,
                       q.arrival_s, q.first_token_s, q.finish_s,
                       q.rejected ? 0.0 : q.ttft_s() * 1e3, q.rejected ? 0.0 : q.tpot_s() * 1e3,
                       q.rejected ? 0.0 : q.e2e_s() * 1e3, q.prompt_tokens, q.output_tokens,
                       q.prefix_hit_tokens, q.preemptions, q.rejected ? 1 : 0);
  }
}

void write_iterations_csv(const std::string& path, const ServeResult& r) {
  auto out = open_output(path, "--iterations-csv");
  out << "start_s,duration_ms,prefill_tokens,decode_seqs,batch_seqs,running,waiting,"
         "kv_blocks_used,kv_use,preemptions\n";
  for (const auto& it : r.iterations) {
    out << fmt::format(
        "{:.6f},{:.4f},{},{},{},{},{},{},{:.4f},{}\n", it.start_s, it.duration_s * 1e3,
        it.prefill_tokens, it.decode_seqs, it.batch_seqs, it.running, it.waiting, it.kv_blocks_used,
        static_cast<double>(it.kv_blocks_used) / static_cast<double>(r.kv_blocks), it.preemptions);
  }
}

XySeries cdf_series(const std::string& label, std::vector<double> values_s) {
  std::sort(values_s.begin(), values_s.end());
  XySeries s{label, {}, {}, true, false, {}};
  for (size_t i = 0; i < values_s.size(); ++i) {
    s.x.push_back(values_s[i] * 1e3);
    s.y.push_back(static_cast<double>(i + 1) / static_cast<double>(values_s.size()));
  }
  return s;
}

void write_charts(const std::string& prefix, const ServeResult& r, const std::string& title) {
  std::vector<double> ttft, tpot;
  for (const auto& q : r.requests) {
    if (q.rejected) continue;
    ttft.push_back(q.ttft_s());
    if (q.output_tokens > 1) tpot.push_back(q.tpot_s());
  }
  const std::pair<const char*, std::vector<double>*> cdfs[] = {{"ttft", &ttft}, {"tpot", &tpot}};
  for (const auto& [name, values] : cdfs) {
    if (values->empty()) continue;
    XyChart chart{fmt::format("{} CDF: {}", name, title),
                  "predicted, per request",
                  fmt::format("{} (ms)", name),
                  "fraction of requests",
                  {cdf_series(name, *values)}};
    open_output(prefix + "-" + name + "-cdf.svg", "--svg-prefix") << render_xy_chart_svg(chart);
  }
  XySeries kv{"KV cache use", {}, {}, true, false, {}};
  XySeries batch{"batch (sequences / max)", {}, {}, true, false, {}};
  int64_t max_batch = 1;
  for (const auto& it : r.iterations) max_batch = std::max(max_batch, it.batch_seqs);
  for (const auto& it : r.iterations) {
    kv.x.push_back(it.start_s);
    kv.y.push_back(static_cast<double>(it.kv_blocks_used) / static_cast<double>(r.kv_blocks));
    batch.x.push_back(it.start_s);
    batch.y.push_back(static_cast<double>(it.batch_seqs) / static_cast<double>(max_batch));
  }
  XyChart chart{"KV cache use over time: " + title,
                fmt::format("{} blocks; largest batch {} sequences", r.kv_blocks, max_batch),
                "time (s)",
                "fraction",
                {kv, batch}};
  open_output(prefix + "-kv.svg", "--svg-prefix") << render_xy_chart_svg(chart);
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
    SloTargets slo;
    if (!a.slo.empty()) {
      const CapacitySlo targets = parse_capacity_slo(a.slo);
      slo.ttft_s = targets.ttft_p99_s;
      slo.tpot_s = targets.tpot_p99_s;
    }
    std::vector<ServeRequest> requests = make_workload(a.serve, a.serve.rate);
    const KvBudget kv = size_kv_cache(engine, model, hw.spec, o);
    nlohmann::json info = {{"model", model.name},
                           {"hardware", hw.spec.name},
                           {"cost_model", hw.cost->name()},
                           {"tp", o.tp},
                           {"policy", schedule_policy_name(engine.policy)},
                           {"max_num_seqs", engine.max_num_seqs},
                           {"max_num_batched_tokens", engine.max_num_batched_tokens},
                           {"prefix_caching", engine.prefix_caching},
                           {"kv_cache",
                            {{"blocks", kv.blocks},
                             {"block_tokens", engine.block_size},
                             {"block_bytes", kv.block_bytes},
                             {"usable_bytes", kv.usable_bytes},
                             {"weights_bytes", kv.weights_bytes},
                             {"activations_bytes", kv.activations_bytes}}},
                           {"fits", kv.fits()}};
    if (!kv.fits()) {
      // Not fitting is a result: say so with the numbers.
      if (format == OutputFormat::json) {
        print_json(info);
      } else {
        std::cout << fmt::format(
            "{} does not fit on {} (tp {}): weights {:.1f} GB + activations {:.1f} GB > "
            "usable {:.1f} GB\n",
            model.name, hw.spec.display_name, o.tp, kv.weights_bytes / 1e9,
            kv.activations_bytes / 1e9, kv.usable_bytes / 1e9);
      }
      return;
    }
    PredictedIterationCost cost(model, hw.spec, *hw.cost, o, load_host_overhead(), draft.get());
    const ServeResult result = run_engine(requests, engine, cost);
    const ServeSummary s = summarize(result, slo);
    if (!a.requests_csv.empty()) write_requests_csv(a.requests_csv, result);
    if (!a.iterations_csv.empty()) write_iterations_csv(a.iterations_csv, result);
    if (!a.svg_prefix.empty()) {
      write_charts(a.svg_prefix, result,
                   fmt::format("{} on {}, {}", model.name, hw.spec.name, engine.max_num_seqs));
    }
    nlohmann::json out = info;
    out.update({{"requests", s.requests},
                {"completed", s.completed},
                {"rejected", s.rejected},
                {"ttft_ms", stats_ms(s.ttft)},
                {"tpot_ms", stats_ms(s.tpot)},
                {"itl_ms", stats_ms(s.itl)},
                {"e2e_ms", stats_ms(s.e2e)},
                {"duration_s", s.duration_s},
                {"requests_per_s", s.requests_per_s},
                {"output_tokens_per_s", s.output_tokens_per_s},
                {"total_tokens_per_s", s.total_tokens_per_s},
                {"goodput_requests_per_s", s.goodput_requests_per_s},
                {"slo_attainment", s.slo_attainment},
                {"preemptions", s.preemptions},
                {"prefix_hit_rate", s.prefix_hit_rate},
                {"draft_acceptance", s.draft_acceptance},
                {"mean_batch_seqs", s.mean_batch_seqs},
                {"mean_kv_use", s.mean_kv_use},
                {"max_kv_use", s.max_kv_use},
                {"iterations", s.iterations}});
    if (format == OutputFormat::json) {
      print_json(out);
      return;
    }
    Table t({"metric", "mean", "p50", "p90", "p99"});
    auto row = [&](const char* name, const LatencyStats& l) {
      t.add_row({name, format_fixed(l.mean_s * 1e3, 2), format_fixed(l.p50_s * 1e3, 2),
                 format_fixed(l.p90_s * 1e3, 2), format_fixed(l.p99_s * 1e3, 2)});
    };
    row("ttft_ms", s.ttft);
    row("tpot_ms", s.tpot);
    row("itl_ms", s.itl);
    row("e2e_ms", s.e2e);
    if (format == OutputFormat::csv) {
      std::cout << t.to_csv();
      return;
    }
    std::cout << fmt::format(
                     "{} on {} (tp {}), policy {}, {} requests ({} rejected), KV cache {} blocks "
                     "of {} tokens\n\n",
                     model.name, hw.spec.display_name, o.tp, schedule_policy_name(engine.policy),
                     s.requests, s.rejected, kv.blocks, engine.block_size)
              << t.to_text()
              << fmt::format(
                     "\nthroughput {:.2f} req/s, {:.0f} output tok/s; goodput {:.2f} req/s "
                     "({:.1f}% in SLO); preemptions {}; prefix hit rate {:.1f}%; mean batch "
                     "{:.1f}; KV use mean {:.1f}%, max {:.1f}%\n",
                     s.requests_per_s, s.output_tokens_per_s, s.goodput_requests_per_s,
                     100 * s.slo_attainment, s.preemptions, 100 * s.prefix_hit_rate,
                     s.mean_batch_seqs, 100 * s.mean_kv_use, 100 * s.max_kv_use);
  });
}

}  // namespace inferlab::cli
