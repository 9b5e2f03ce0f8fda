#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "area/area_model.hpp"
#include "area/die_cost.hpp"
#include "hw/hardware_template.hpp"
#include "report/table.hpp"

namespace inferlab {

// `area`: die area part by part, die cost (wafer, yield), memory and package cost.
nlohmann::json area_json(const HardwareTemplate& hardware, const AreaEstimate& area,
                         const DeviceCost& cost);
// One row per component: area, share of the die, where the figure comes from.
Table area_table(const AreaEstimate& area);
// The text answer: a heading (with the published die area when known), the table and a line
// of costs.
std::string area_text(const HardwareTemplate& hardware, const AreaEstimate& area,
                      const DeviceCost& cost);

}  // namespace inferlab
