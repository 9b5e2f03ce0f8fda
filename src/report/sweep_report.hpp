#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cost/cost_loader.hpp"
#include "predict/sweep.hpp"
#include "report/table.hpp"

namespace inferlab {

// `sweep`: one row per point of the grid, under the sustained clock applied (JSON
// "sustained_clock"; the text's heading line). The CSV table carries raw numbers (ms, bytes),
// the text table human units.
nlohmann::json sweep_json(const std::string& model, const std::string& hardware,
                          const SustainedClockUse& sustained, const std::vector<SweepRow>& rows);
std::string sweep_text(const SustainedClockUse& sustained, const std::vector<SweepRow>& rows);
Table sweep_table(const std::vector<SweepRow>& rows, OutputFormat format);

}  // namespace inferlab
