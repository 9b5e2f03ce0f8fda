#include "report/html_report_serve.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "report/table.hpp"
#include "report/xy_chart_svg.hpp"

namespace inferlab {

namespace {

// Points per line drawn at most: a page stays small for long runs.
constexpr size_t kMaxPoints = 1500;

// ms to three significant figures; seconds from 1 s up.
std::string ms(double seconds) {
  if (seconds >= 1.0) return fmt::format("{:.3g} s", seconds);
  return fmt::format("{:.3g} ms", seconds * 1e3);
}

// The empirical CDF of `values_s` in ms, with the p50/p90/p99 marked and named.
std::string cdf_svg(const std::string& name, std::vector<double> values_s,
                    const LatencyStats& stats) {
  std::sort(values_s.begin(), values_s.end());
  XySeries line{name, {}, {}, true, false, {}};
  const size_t n = values_s.size();
  const size_t stride = std::max<size_t>(1, n / kMaxPoints);
  for (size_t i = 0; i < n; i += stride) {
    line.x.push_back(values_s[i] * 1e3);
    line.y.push_back(static_cast<double>(i + 1) / static_cast<double>(n));
  }
  if (n > 0 && (n - 1) % stride != 0) {
    line.x.push_back(values_s.back() * 1e3);
    line.y.push_back(1.0);
  }
  XySeries marks{"p50 / p90 / p99", {}, {}, false, true, {}};
  for (auto [q, v] : {std::pair{0.5, stats.p50_s}, {0.9, stats.p90_s}, {0.99, stats.p99_s}}) {
    marks.x.push_back(v * 1e3);
    marks.y.push_back(q);
    marks.point_labels.push_back(fmt::format("p{:g} {}", q * 100, ms(v)));
  }
  XyChart chart{
      name + " CDF",
      fmt::format("{} requests; mean {}, max {}", stats.count, ms(stats.mean_s), ms(stats.max_s)),
      name + " (ms)",
      "fraction of requests",
      {line, marks}};
  return render_xy_chart_svg(chart);
}

std::string over_time_svg(const std::string& title, const std::string& subtitle,
                          const std::string& y_label, std::vector<XySeries> series) {
  XyChart chart{title, subtitle, "time (s)", y_label, std::move(series)};
  return render_xy_chart_svg(chart);
}

std::string latency_table(const ServeSummary& s) {
  std::vector<std::vector<std::string>> rows;
  auto row = [&](const char* name, const LatencyStats& l) {
    if (l.count == 0) return;
    rows.push_back({name, std::to_string(l.count), format_fixed(l.mean_s * 1e3, 2),
                    format_fixed(l.p50_s * 1e3, 2), format_fixed(l.p90_s * 1e3, 2),
                    format_fixed(l.p99_s * 1e3, 2), format_fixed(l.max_s * 1e3, 2)});
  };
  row("TTFT", s.ttft);
  row("TPOT", s.tpot);
  row("ITL", s.itl);
  row("end to end", s.e2e);
  return html_table({"metric (ms)", "count", "mean", "p50", "p90", "p99", "max"}, rows,
                    {1, 2, 3, 4, 5, 6});
}

}  // namespace

HtmlPage serve_html_page(const ServeReportInput& in) {
  const ServeResult& r = *in.result;
  const ServeSummary& s = *in.summary;
  HtmlPage page;
  page.title = in.title;
  page.subtitle = in.subtitle;
  page.figures = {
      {"Requests", std::to_string(s.completed),
       fmt::format("of {}; {} rejected", s.requests, s.rejected), s.rejected > 0},
      {"Throughput", format_fixed(s.requests_per_s, 2) + " req/s",
       format_fixed(s.output_tokens_per_s, 0) + " output tok/s"},
      {"TTFT p50 / p99", ms(s.ttft.p50_s), "p99 " + ms(s.ttft.p99_s)},
      {"TPOT p50 / p99", ms(s.tpot.p50_s), "p99 " + ms(s.tpot.p99_s)},
      {"E2E p50 / p99", ms(s.e2e.p50_s), "p99 " + ms(s.e2e.p99_s)},
      in.has_slo ? HtmlFigure{"Goodput", format_fixed(s.goodput_requests_per_s, 2) + " req/s",
                              format_fixed(100 * s.slo_attainment, 1) + "% within SLO",
                              s.slo_attainment < 0.99}
                 : HtmlFigure{"Goodput", "-", "no --slo given"},
      {"Mean batch", format_fixed(s.mean_batch_seqs, 1) + " seqs",
       fmt::format("{} iterations", s.iterations)},
      {"KV cache use", format_fixed(100 * s.max_kv_use, 1) + "% max",
       fmt::format("mean {}%; {} preemptions", format_fixed(100 * s.mean_kv_use, 1), s.preemptions),
       s.preemptions > 0},
  };
  std::vector<double> ttft, tpot, e2e;
  for (const auto& q : r.requests) {
    if (q.rejected || q.first_token_s < 0) continue;
    ttft.push_back(q.ttft_s());
    e2e.push_back(q.e2e_s());
    if (q.output_tokens > 1) tpot.push_back(q.tpot_s());
  }
  page.sections.push_back({"Latency percentiles", "Per completed request (ITL: per token gap).",
                           latency_table(s), false});
  const char* cdf_intro = "Empirical CDF over completed requests; markers at p50, p90 and p99.";
  if (!ttft.empty()) {
    page.sections.push_back(
        {"Time to first token", cdf_intro, cdf_svg("TTFT", ttft, s.ttft), false});
  }
  if (!tpot.empty()) {
    page.sections.push_back(
        {"Time per output token", cdf_intro, cdf_svg("TPOT", tpot, s.tpot), false});
  }
  if (!e2e.empty()) {
    page.sections.push_back({"End-to-end latency", cdf_intro, cdf_svg("E2E", e2e, s.e2e), false});
  }
  if (!r.iterations.empty()) {
    XySeries kv{"KV cache use (%)", {}, {}, true, false, {}};
    XySeries batch{"batch (sequences)", {}, {}, true, false, {}};
    XySeries waiting{"waiting requests", {}, {}, true, false, {}};
    const size_t stride = std::max<size_t>(1, r.iterations.size() / kMaxPoints);
    int64_t max_batch = 0;
    for (const auto& it : r.iterations) max_batch = std::max(max_batch, it.batch_seqs);
    for (size_t i = 0; i < r.iterations.size(); i += stride) {
      const auto& it = r.iterations[i];
      kv.x.push_back(it.start_s);
      kv.y.push_back(r.kv_blocks > 0 ? 100.0 * static_cast<double>(it.kv_blocks_used) /
                                           static_cast<double>(r.kv_blocks)
                                     : 0.0);
      batch.x.push_back(it.start_s);
      batch.y.push_back(static_cast<double>(it.batch_seqs));
      waiting.x.push_back(it.start_s);
      waiting.y.push_back(static_cast<double>(it.waiting));
    }
    page.sections.push_back(
        {"KV cache use over time",
         fmt::format("Share of the {} KV blocks ({} tokens each) in use at each iteration{}.",
                     r.kv_blocks, in.block_tokens,
                     stride > 1 ? fmt::format(" (every {}th iteration drawn)", stride) : ""),
         over_time_svg(
             "KV cache use",
             fmt::format("{} blocks; max {}%", r.kv_blocks, format_fixed(100 * s.max_kv_use, 1)),
             "KV blocks in use (%)", {kv}),
         true});
    page.sections.push_back(
        {"Batch size over time",
         "Sequences in each iteration's batch (prefilling or decoding), and requests waiting.",
         over_time_svg("Batch and queue",
                       fmt::format("largest batch {} sequences; mean {}", max_batch,
                                   format_fixed(s.mean_batch_seqs, 1)),
                       "sequences", {batch, waiting}),
         false});
  }
  page.footer =
      "Written by inferlab report --kind serve. Simulated serving: scheduler and KV cache "
      "as in the engine, iteration times from the cost model.";
  return page;
}

HtmlPage serve_not_fitting_page(const std::string& title, const std::string& subtitle,
                                double weights_bytes, double activations_bytes,
                                double usable_bytes) {
  HtmlPage page;
  page.title = title;
  page.subtitle = subtitle;
  page.figures = {{"Fits", "no", "no room for a KV cache", true},
                  {"Weights", format_bytes(weights_bytes), "per GPU"},
                  {"Activations", format_bytes(activations_bytes), "peak"},
                  {"Usable memory", format_bytes(usable_bytes), "capacity x utilization"}};
  page.sections.push_back(
      {"Does not fit",
       "Weights and activations leave no room for a KV cache, so no request can be served. "
       "Try a larger --tp, --weights int8/int4/fp8, or a higher --gpu-memory-utilization.",
       "", false});
  page.footer = "Written by inferlab report --kind serve.";
  return page;
}

}  // namespace inferlab
