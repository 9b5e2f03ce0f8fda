#include "report/html_report_predict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "report/html_report_charts.hpp"
#include "report/roofline_report.hpp"
#include "report/table.hpp"

namespace inferlab {

namespace {

// Operators under this share of their step are drawn as one "other ops" segment.
constexpr double kSmallShare = 0.015;

// Three significant figures; seconds from 10 s up.
std::string ms_text(double seconds) {
  if (seconds >= 10.0) return fmt::format("{:.1f} s", seconds);
  const double ms = seconds * 1e3;
  return ms >= 100 ? fmt::format("{:.0f} ms", ms) : fmt::format("{:.3g} ms", ms);
}

StackedBar step_bar(const std::string& label, const StepPrediction& step) {
  StackedBar bar{label, fmt::format("{}, {} kernels", ms_text(step.time_s), step.kernels), {}};
  const double total = std::max(step.time_s, step.gpu_s);
  std::vector<const PricedOp*> ops;
  for (const auto& p : step.ops) ops.push_back(&p);
  std::stable_sort(ops.begin(), ops.end(), [](const PricedOp* a, const PricedOp* b) {
    return a->total_s() > b->total_s();
  });
  double other = 0;
  for (const PricedOp* p : ops) {
    const double share = total > 0 ? p->total_s() / total : 0.0;
    if (share < kSmallShare) {
      other += p->total_s();
      continue;
    }
    bar.parts.push_back({p->op.name, p->total_s(),
                         fmt::format("{} ({:.0f}%)", ms_text(p->total_s()), 100 * share), ""});
  }
  if (other > 0) {
    bar.parts.push_back({"other ops", other,
                         fmt::format("{} ({:.0f}%)", ms_text(other), 100 * other / total),
                         "#c7ccd4"});
  }
  const double host = step.time_s - step.gpu_s;
  if (host > 1e-12) {
    bar.parts.push_back({"launch / host", host,
                         fmt::format("{} ({:.0f}%)", ms_text(host), 100 * host / total),
                         "#6b7280"});
  }
  return bar;
}

std::string memory_bar(const MemoryEstimate& m) {
  StackedBar bar{
      "GPU memory",
      fmt::format("{} of {}", format_bytes(m.total_bytes), format_bytes(m.capacity_bytes)),
      {}};
  auto part = [&](const char* name, double bytes, const char* color) {
    if (bytes > 0) {
      bar.parts.push_back({name, bytes,
                           fmt::format("{} ({:.0f}%)", format_bytes(bytes),
                                       100 * bytes / std::max(m.capacity_bytes, m.total_bytes)),
                           color});
    }
  };
  part("weights", m.weights_bytes, "#4e79a7");
  part("KV cache", m.kv_cache_bytes, "#f28e2b");
  part("activations", m.activations_bytes, "#59a14f");
  if (m.fits) {
    part("free (usable)", m.usable_bytes - m.total_bytes, "#dfe5ec");
  } else {
    part("over the usable memory", m.total_bytes - m.usable_bytes, "#c0392b");
  }
  part("reserved (1 - utilization)", m.capacity_bytes - std::max(m.usable_bytes, m.total_bytes),
       "#f3f4f6");
  return render_stacked_bars_svg({bar}, 560);
}

// Time share of each bound, per phase.
std::string bounds_table(const RequestPrediction& r) {
  std::vector<std::vector<std::string>> rows;
  for (auto [phase, step] : {std::pair{"prefill", &r.prefill}, {"decode", &r.first_decode}}) {
    std::map<std::string, double> by_bound;
    for (const auto& p : step->ops) by_bound[std::string(bound_name(p.cost.bound))] += p.total_s();
    for (const auto& [bound, s] : by_bound) {
      rows.push_back({phase, bound, format_ms(s),
                      fmt::format("{:.1f}%", step->gpu_s > 0 ? 100 * s / step->gpu_s : 0.0)});
    }
  }
  return html_table({"phase", "bound", "GPU ms", "share of GPU time"}, rows, {2, 3});
}

std::string ops_table(const RequestPrediction& r) {
  std::vector<std::vector<std::string>> rows;
  for (auto [phase, step] : {std::pair{"prefill", &r.prefill}, {"decode", &r.first_decode}}) {
    for (const auto& p : step->ops) {
      const double count = static_cast<double>(p.op.count);
      const double share = step->gpu_s > 0 ? p.total_s() / step->gpu_s : 0.0;
      rows.push_back({phase, p.op.name, std::string(op_kind_name(p.op.kind)),
                      std::to_string(p.op.count), format_count(p.op.flops * count),
                      format_bytes(p.op.bytes() * count),
                      fmt::format("{:.3g}", p.op.bytes() > 0 ? p.op.flops / p.op.bytes() : 0.0),
                      format_ms(p.total_s()), format_fixed(100 * share, 1) + "%",
                      std::string(bound_name(p.cost.bound)),
                      format_fixed(100 * p.cost.efficiency(), 0) + "%"});
    }
  }
  return "<div class=\"scroll\">" +
         html_table({"phase", "op", "kind", "count", "FLOPs", "bytes", "FLOP/B", "ms", "share",
                     "bound", "efficiency"},
                    rows, {3, 4, 5, 6, 7, 8, 10}) +
         "</div>";
}

}  // namespace

RooflineChart prediction_roofline(const HardwareSpec& hw, const RequestPrediction& r) {
  RooflineChart chart = roofline_chart(hw);  // the same ceilings as `inferlab roofline`
  chart.title.clear();
  for (auto [phase, step] : {std::pair{"prefill", &r.prefill}, {"decode", &r.first_decode}}) {
    for (const auto& p : step->ops) {
      if (p.op.flops <= 0 || p.op.bytes() <= 0 || p.cost.time_s <= 0) continue;
      chart.points.push_back({p.op.name, p.op.flops / p.op.bytes(), p.op.flops / p.cost.time_s,
                              phase, step->gpu_s > 0 ? p.total_s() / step->gpu_s : 0.0});
    }
  }
  return chart;
}

HtmlPage predict_html_page(const PredictReportInput& in) {
  const RequestPrediction& r = *in.prediction;
  const HardwareSpec& hw = *in.hardware;
  HtmlPage page;
  page.title = fmt::format("{} on {}", in.model, hw.display_name);
  page.subtitle = fmt::format(
      "inferlab predict: batch {}, {} prompt tokens, {} output tokens per sequence; {}; {} cost "
      "model",
      in.batch, in.input_tokens, in.output_tokens, in.settings, in.cost_model);
  page.figures = {
      {"TTFT", ms_text(r.ttft_s), fmt::format("prefill {}", ms_text(r.prefill_s))},
      {"TPOT", ms_text(r.tpot_s), fmt::format("mean of {} decode steps", r.decode_steps)},
      {"End to end", ms_text(r.e2e_s), fmt::format("{} output tokens", in.output_tokens)},
      {"Decode", format_fixed(r.decode_tokens_per_s, 0) + " tok/s",
       fmt::format("batch {}, while decoding", in.batch)},
      {"Overall", format_fixed(r.total_tokens_per_s, 0) + " tok/s", "output tokens / e2e"},
      {"Memory / GPU", format_bytes(r.memory.total_bytes),
       fmt::format("usable {}", format_bytes(r.memory.usable_bytes))},
      {"Fits", r.memory.fits ? "yes" : "no",
       fmt::format("capacity {}", format_bytes(r.memory.capacity_bytes)), !r.memory.fits},
      {"Kernels / step", fmt::format("{} / {}", r.prefill.kernels, r.first_decode.kernels),
       "prefill / decode"},
  };
  page.sections.push_back(
      {"Where the time goes",
       fmt::format("Each bar is one step, drawn to full width: the operators' share of the step "
                   "(every layer's instances together), largest first; operators under {:.1f}% "
                   "are grouped. Decode is the first decode step (context {}).",
                   100 * kSmallShare, in.input_tokens + 1),
       render_stacked_bars_svg(
           {step_bar("Prefill step", r.prefill), step_bar("Decode step", r.first_decode)}),
       false});
  RooflineChart roofline = prediction_roofline(hw, r);
  roofline.title = fmt::format("{}: {} operators, batch {}", hw.display_name, in.model, in.batch);
  page.sections.push_back(
      {"Roofline",
       "Each operator at its arithmetic intensity and attained FLOP/s (one instance). Points "
       "far below the ceilings are latency- or efficiency-bound; hover a point for its numbers.",
       render_roofline_svg(roofline), false});
  page.sections.push_back({"Memory",
                           r.memory.fits ? "Per GPU: weights, KV cache for every sequence's "
                                           "prompt and output, peak activations."
                                         : "Does NOT fit: the total exceeds the usable memory.",
                           memory_bar(r.memory), true});
  page.sections.push_back(
      {"Bounds", "Which limit each step's GPU time hits, by the cost model's verdict per operator.",
       bounds_table(r), true});
  page.sections.push_back({"Per-operator breakdown",
                           "All instances of an operator per step; click a column to sort.",
                           ops_table(r), false});
  page.sections.push_back({"Provenance", "",
                           "<p class=\"intro\">Cost model: " + html_escape(in.cost_model) + " (" +
                               html_escape(in.cost_source) + ").</p><p class=\"intro\">Ceilings: " +
                               html_escape(hw.ceiling_source()) + ".</p>",
                           false});
  page.footer = "Written by inferlab report --kind predict. Predictions, not measurements.";
  return page;
}

}  // namespace inferlab
