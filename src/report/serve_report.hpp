#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cost/cost_loader.hpp"
#include "hw/hardware_spec.hpp"
#include "model/model_config.hpp"
#include "report/table.hpp"
#include "report/xy_chart_svg.hpp"
#include "serve/metrics.hpp"
#include "serve/serving_loop.hpp"
#include "serve/serving_setup.hpp"

namespace inferlab {

// What `serve` ran: the model, the hardware, the scheduler's limits and its KV cache.
struct ServeSetupView {
  const ModelConfig& model;
  const HardwareSpec& hardware;
  std::string cost_model;
  int tp = 1;
  const SchedulerConfig& scheduler;
  const KvBudget& kv;
  SustainedClockUse sustained = {};  // JSON "sustained_clock", a line under the heading
};

// The setup as JSON (also the whole answer when the model does not fit).
nlohmann::json serve_setup_json(const ServeSetupView& setup);
// "<model> does not fit on <hardware> ...": the text answer when it does not fit.
std::string serve_not_fitting_text(const ServeSetupView& setup);

// The run: the setup's fields, then the summary's.
nlohmann::json serve_json(const ServeSetupView& setup, const ServeSummary& summary);
// The summary's fields alone (`loadgen`, which measures a server it knows nothing about).
nlohmann::json serve_summary_json(const ServeSummary& summary);
// One row per latency metric (ttft, tpot, itl, e2e): mean and percentiles in ms.
Table serve_latency_table(const ServeSummary& summary);
// The text answer: a heading, the latency table and a line of throughput and cache figures.
std::string serve_text(const ServeSetupView& setup, const ServeSummary& summary);

// One row per request / per iteration, as CSV.
std::string serve_requests_csv(const ServeResult& result);
std::string serve_iterations_csv(const ServeResult& result);

// The charts of a run: (file suffix, chart) for the TTFT and TPOT CDFs (where there are
// values) and KV-cache use over time; the suffixes are "-ttft-cdf.svg", "-tpot-cdf.svg" and
// "-kv.svg". Render each with render_xy_chart_svg.
std::vector<std::pair<std::string, XyChart>> serve_charts(const ServeResult& result,
                                                          const std::string& title);

}  // namespace inferlab
