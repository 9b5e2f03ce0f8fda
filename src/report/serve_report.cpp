#include "report/serve_report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "report/sustained_report.hpp"

namespace inferlab {

namespace {
nlohmann::json stats_ms(const LatencyStats& s) {
  return {{"mean", s.mean_s * 1e3}, {"p50", s.p50_s * 1e3}, {"p90", s.p90_s * 1e3},
          {"p99", s.p99_s * 1e3},   {"max", s.max_s * 1e3}, {"count", s.count}};
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

XyChart kv_chart(const ServeResult& r, const std::string& title) {
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
  return {"KV cache use over time: " + title,
          fmt::format("{} blocks; largest batch {} sequences", r.kv_blocks, max_batch),
          "time (s)",
          "fraction",
          {kv, batch}};
}
}  // namespace

nlohmann::json serve_setup_json(const ServeSetupView& v) {
  return {{"model", v.model.name},
          {"hardware", v.hardware.name},
          {"cost_model", v.cost_model},
          {"sustained_clock", sustained_clock_json(v.sustained)},
          {"tp", v.tp},
          {"policy", schedule_policy_name(v.scheduler.policy)},
          {"max_num_seqs", v.scheduler.max_num_seqs},
          {"max_num_batched_tokens", v.scheduler.max_num_batched_tokens},
          {"max_model_len", v.scheduler.max_model_len},
          {"prefix_caching", v.scheduler.prefix_caching},
          {"kv_cache",
           {{"blocks", v.kv.blocks},
            {"block_tokens", v.scheduler.block_size},
            {"block_bytes", v.kv.block_bytes},
            {"usable_bytes", v.kv.usable_bytes},
            {"weights_bytes", v.kv.weights_bytes},
            {"activations_bytes", v.kv.activations_bytes}}},
          {"fits", v.kv.fits()}};
}

std::string serve_not_fitting_text(const ServeSetupView& v) {
  return fmt::format(
      "{} does not fit on {} (tp {}): weights {:.1f} GB + activations {:.1f} GB > "
      "usable {:.1f} GB\n",
      v.model.name, v.hardware.display_name, v.tp, v.kv.weights_bytes / 1e9,
      v.kv.activations_bytes / 1e9, v.kv.usable_bytes / 1e9);
}

nlohmann::json serve_json(const ServeSetupView& setup, const ServeSummary& s) {
  nlohmann::json out = serve_setup_json(setup);
  out.update(serve_summary_json(s));
  return out;
}

nlohmann::json serve_summary_json(const ServeSummary& s) {
  return nlohmann::json({{"requests", s.requests},
                         {"completed", s.completed},
                         {"rejected", s.rejected},
                         {"rejected_past_max_model_len", s.rejected_past_max_model_len},
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
}

Table serve_latency_table(const ServeSummary& s) {
  Table t({"metric", "mean", "p50", "p90", "p99"});
  auto row = [&](const char* name, const LatencyStats& l) {
    t.add_row({name, format_fixed(l.mean_s * 1e3, 2), format_fixed(l.p50_s * 1e3, 2),
               format_fixed(l.p90_s * 1e3, 2), format_fixed(l.p99_s * 1e3, 2)});
  };
  row("ttft_ms", s.ttft);
  row("tpot_ms", s.tpot);
  row("itl_ms", s.itl);
  row("e2e_ms", s.e2e);
  return t;
}

std::string serve_text(const ServeSetupView& v, const ServeSummary& s) {
  return fmt::format(
             "{} on {} (tp {}), policy {}, {} requests ({} rejected{}), KV cache {} blocks "
             "of {} tokens\n{}\n",
             v.model.name, v.hardware.display_name, v.tp, schedule_policy_name(v.scheduler.policy),
             s.requests, s.rejected,
             s.rejected_past_max_model_len > 0
                 ? fmt::format(", {} past the max model length of {} tokens",
                               s.rejected_past_max_model_len, v.scheduler.max_model_len)
                 : "",
             v.kv.blocks, v.scheduler.block_size, sustained_clock_line(v.sustained)) +
         serve_latency_table(s).to_text() +
         fmt::format(
             "\nthroughput {:.2f} req/s, {:.0f} output tok/s; goodput {:.2f} req/s "
             "({:.1f}% in SLO); preemptions {}; prefix hit rate {:.1f}%; mean batch "
             "{:.1f}; KV use mean {:.1f}%, max {:.1f}%\n",
             s.requests_per_s, s.output_tokens_per_s, s.goodput_requests_per_s,
             100 * s.slo_attainment, s.preemptions, 100 * s.prefix_hit_rate, s.mean_batch_seqs,
             100 * s.mean_kv_use, 100 * s.max_kv_use);
}

std::string serve_requests_csv(const ServeResult& r) {
  std::string out =
      "id,arrival_s,first_token_s,finish_s,ttft_ms,tpot_ms,e2e_ms,prompt_tokens,output_tokens,"
      "prefix_hit_tokens,preemptions,rejected\n";
  for (size_t i = 0; i < r.requests.size(); ++i) {
    const auto& q = r.requests[i];
    out += fmt::format("{},{:.6f},{:.6f},{:.6f},{:.4f},{:.4f},{:.4f},{},{},{},{},{}\n", i,
                       q.arrival_s, q.first_token_s, q.finish_s,
                       q.rejected ? 0.0 : q.ttft_s() * 1e3, q.rejected ? 0.0 : q.tpot_s() * 1e3,
                       q.rejected ? 0.0 : q.e2e_s() * 1e3, q.prompt_tokens, q.output_tokens,
                       q.prefix_hit_tokens, q.preemptions, q.rejected ? 1 : 0);
  }
  return out;
}

std::string serve_iterations_csv(const ServeResult& r) {
  std::string out =
      "start_s,duration_ms,prefill_tokens,decode_seqs,batch_seqs,running,waiting,"
      "kv_blocks_used,kv_use,preemptions,device_ms,simulated_ms,prefill_max_context,"
      "decode_mean_context,decode_max_context\n";
  for (const auto& it : r.iterations) {
    // simulated_ms: the cost model's price of this iteration (empty where none priced it).
    const std::string simulated_ms =
        it.priced_s >= 0.0 ? fmt::format("{:.4f}", it.priced_s * 1e3) : std::string();
    out += fmt::format("{:.6f},{:.4f},{},{},{},{},{},{},{:.4f},{},{:.4f},{},{},{},{}\n", it.start_s,
                       it.duration_s * 1e3, it.prefill_tokens, it.decode_seqs, it.batch_seqs,
                       it.running, it.waiting, it.kv_blocks_used,
                       static_cast<double>(it.kv_blocks_used) / static_cast<double>(r.kv_blocks),
                       it.preemptions, it.device_s * 1e3, simulated_ms, it.prefill_max_context,
                       it.decode_mean_context, it.decode_max_context);
  }
  return out;
}

std::vector<std::pair<std::string, XyChart>> serve_charts(const ServeResult& r,
                                                          const std::string& title) {
  std::vector<double> ttft, tpot;
  for (const auto& q : r.requests) {
    if (q.rejected) continue;
    ttft.push_back(q.ttft_s());
    if (q.output_tokens > 1) tpot.push_back(q.tpot_s());
  }
  std::vector<std::pair<std::string, XyChart>> charts;
  const std::pair<const char*, std::vector<double>*> cdfs[] = {{"ttft", &ttft}, {"tpot", &tpot}};
  for (const auto& [name, values] : cdfs) {
    if (values->empty()) continue;
    XyChart chart{fmt::format("{} CDF: {}", name, title),
                  "predicted, per request",
                  fmt::format("{} (ms)", name),
                  "fraction of requests",
                  {cdf_series(name, *values)}};
    charts.emplace_back(fmt::format("-{}-cdf.svg", name), std::move(chart));
  }
  charts.emplace_back("-kv.svg", kv_chart(r, title));
  return charts;
}

}  // namespace inferlab
