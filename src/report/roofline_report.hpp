#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "hw/hardware_spec.hpp"
#include "predict/request_predictor.hpp"
#include "report/roofline_svg.hpp"
#include "report/table.hpp"

namespace inferlab {

// The ceilings of a GPU: from its measured profile when it has one, from the spec sheet
// otherwise. Titled with the GPU's name and where the ceilings come from.
RooflineChart roofline_chart(const HardwareSpec& hardware);
// Places a request's prefill and first decode step operators on the chart, and says so in its
// title.
void add_request_points(RooflineChart& chart, const std::string& model,
                        const PredictOptions& options, const RequestPrediction& prediction);

// `roofline`: the ceilings (with ridge points) and the placed operators.
nlohmann::json roofline_json(const RooflineChart& chart, const HardwareSpec& hardware,
                             const std::string& model, const std::string& svg_path);
Table roofline_table(const RooflineChart& chart);
// The table and where the SVG went.
std::string roofline_text(const RooflineChart& chart, const std::string& svg_path);

}  // namespace inferlab
