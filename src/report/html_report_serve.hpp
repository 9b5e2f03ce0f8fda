#pragma once
#include <string>

#include "report/html_report.hpp"
#include "serve/metrics.hpp"
#include "serve/serving_loop.hpp"

namespace inferlab {

// What `inferlab report --kind serve` shows: one simulated serving run.
struct ServeReportInput {
  std::string title;     // "llama-3.1-8b on NVIDIA H100 SXM5 80GB"
  std::string subtitle;  // workload and engine settings
  const ServeResult* result = nullptr;
  const ServeSummary* summary = nullptr;
  int64_t block_tokens = 16;
  bool has_slo = false;  // --slo given: goodput is meaningful
};

// Summary figures, latency CDFs (TTFT, TPOT, end to end), KV-cache use and batch size over
// time (from the run's per-iteration records), and the percentile table.
HtmlPage serve_html_page(const ServeReportInput& input);

// The page when the model leaves no room for a KV cache (a result, not an error).
HtmlPage serve_not_fitting_page(const std::string& title, const std::string& subtitle,
                                double weights_bytes, double activations_bytes,
                                double usable_bytes);

}  // namespace inferlab
