#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cost/cost_loader.hpp"
#include "predict/request_predictor.hpp"
#include "report/table.hpp"

namespace inferlab {

// The output contract of `predict` and `step` (see docs/predict.md): field names are stable.
nlohmann::json op_to_json(const PricedOp& priced);
nlohmann::json step_to_json(const StepPrediction& step);
nlohmann::json memory_to_json(const MemoryEstimate& memory);
nlohmann::json request_to_json(const RequestPrediction& prediction);

// Per-operator breakdown: one row per operator of the step (all its count instances).
// Human units for the text table; raw numbers (FLOPs, bytes, ms, fraction) for CSV. A
// non-empty phase adds a leading phase column.
Table step_table(const StepPrediction& step, const std::string& phase = "");
Table step_csv_table(const StepPrediction& step, const std::string& phase = "");

// `predict`: what was asked (model, hardware, cost model, sizes, formats, switches), the
// header of the JSON answer.
struct RequestSetupView {
  const std::string& model;
  const HardwareSpec& hardware;
  std::string cost_model, cost_source;
  const PredictOptions& options;
  const Precision& precision;  // as resolved for the hardware
  // What the prediction rests on that no measurement checked (predict/validity.hpp): JSON
  // "unvalidated", and a note under the text tables.
  std::vector<std::string> unvalidated;
  SustainedClockUse sustained = {};  // JSON "sustained_clock", a line under the heading
};
nlohmann::json request_setup_json(const RequestSetupView& setup);
// The text answer: a heading, the summary table, and the prefill and decode breakdowns.
std::string request_text(const RequestSetupView& setup, const RequestPrediction& prediction);
// Both steps' breakdowns in one CSV table with a phase column.
std::string request_csv(const RequestPrediction& prediction);

}  // namespace inferlab
