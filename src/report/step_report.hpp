#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "cost/cost_loader.hpp"
#include "predict/step_predictor.hpp"

namespace inferlab {

// One `step` run: the step predicted and what it was asked for.
struct StepRun {
  std::string model, hardware, hardware_display_name, hardware_source;
  std::string phase;  // prefill | decode
  int64_t batch = 1;
  int64_t context = 0;  // prefill: tokens per sequence; decode: tokens attended
  const StepPrediction* step = nullptr;
  SustainedClockUse sustained = {};  // JSON "sustained_clock", a line under the summary
};

// JSON (output contract of `step`): step_to_json plus the run's settings.
nlohmann::json step_report_json(const StepRun& run);
// Text: a summary line, then the per-operator breakdown; CSV: the breakdown, raw numbers.
std::string step_report_text(const StepRun& run);
std::string step_report_csv(const StepRun& run);

}  // namespace inferlab
