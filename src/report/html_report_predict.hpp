#pragma once
#include <string>

#include "hw/hardware_spec.hpp"
#include "predict/request_predictor.hpp"
#include "report/html_report.hpp"
#include "report/roofline_svg.hpp"

namespace inferlab {

// What `inferlab report --kind predict` shows: the run as `predict` describes it.
struct PredictReportInput {
  std::string model;
  const HardwareSpec* hardware = nullptr;
  std::string cost_model, cost_source;
  int64_t batch = 1, input_tokens = 0, output_tokens = 0;
  std::string settings;  // "weights bf16, KV bf16, vllm kernels, CUDA graphs on, ..."
  const RequestPrediction* prediction = nullptr;
};

// The roofline of the hardware (measured ceilings when it has a profile, the spec sheet's
// otherwise) with the prefill and first decode step's operators on it, weighted by their share
// of their step's time.
RooflineChart prediction_roofline(const HardwareSpec& hardware, const RequestPrediction& r);

// Summary figures, the time of each step as a stacked bar of its operators, the roofline,
// memory and the per-operator table.
HtmlPage predict_html_page(const PredictReportInput& input);

}  // namespace inferlab
