#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "cost/cost_loader.hpp"

namespace inferlab {

// The sustained clock a prediction applied (cost/cost_loader.hpp), in the header of `predict`,
// `step`, `sweep` and `serve`: JSON "sustained_clock" {from (file, calibration, template,
// none), compute_slowdown, file ("" unless from a file), note}, and the text line
// "sustained clock: <note>".
nlohmann::json sustained_clock_json(const SustainedClockUse& use);
std::string sustained_clock_line(const SustainedClockUse& use);

}  // namespace inferlab
