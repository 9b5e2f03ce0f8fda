#include "report/area_report.hpp"

#include <fmt/format.h>

namespace inferlab {

nlohmann::json area_json(const HardwareTemplate& hw, const AreaEstimate& area,
                         const DeviceCost& cost) {
  nlohmann::json components = nlohmann::json::object();
  for (const auto& part : area.components) {
    components[part.name] = {{"area_mm2", part.area_mm2},
                             {"share", part.area_mm2 / area.die_area_mm2},
                             {"transistors", part.transistors},
                             {"basis", part.basis}};
  }
  nlohmann::json out = {{"hardware", hw.name},
                        {"display_name", hw.display_name},
                        {"process_node", area.process_node},
                        {"die_area_mm2", area.die_area_mm2},
                        {"transistors", area.transistors},
                        {"core_area_mm2", area.core_area_mm2},
                        {"physical_cores", area.physical_cores},
                        {"enabled_cores", area.enabled_cores},
                        {"components", components},
                        {"die",
                         {{"dies_per_wafer", cost.die.dies_per_wafer},
                          {"yield", cost.die.yield},
                          {"good_dies_per_wafer", cost.die.good_dies_per_wafer},
                          {"wafer_cost_usd", cost.die.wafer_cost_usd}}},
                        {"die_cost_usd", cost.die.die_cost_usd},
                        {"memory_cost_usd", cost.memory_cost_usd},
                        {"package_cost_usd", cost.package_cost_usd},
                        {"total_cost_usd", cost.total_cost_usd}};
  if (hw.published_die_area_mm2 > 0.0) {
    out["published_die_area_mm2"] = hw.published_die_area_mm2;
    out["area_error"] = area.die_area_mm2 / hw.published_die_area_mm2 - 1.0;
  } else {
    out["published_die_area_mm2"] = nullptr;
  }
  return out;
}

Table area_table(const AreaEstimate& area) {
  Table t({"component", "area_mm2", "share", "basis"});
  for (const auto& part : area.components) {
    t.add_row({part.name, format_fixed(part.area_mm2, 1),
               format_fixed(100.0 * part.area_mm2 / area.die_area_mm2, 1) + "%", part.basis});
  }
  return t;
}

std::string area_text(const HardwareTemplate& hw, const AreaEstimate& area,
                      const DeviceCost& cost) {
  std::string published;
  if (hw.published_die_area_mm2 > 0.0) {
    published = fmt::format(" (published {:.0f} mm^2, {:+.1f}%)", hw.published_die_area_mm2,
                            100.0 * (area.die_area_mm2 / hw.published_die_area_mm2 - 1.0));
  }
  return fmt::format("{} at {}: die {:.0f} mm^2{}\n\n", hw.display_name, area.process_node,
                     area.die_area_mm2, published) +
         area_table(area).to_text() +
         fmt::format(
             "\n{:.1f} dies per wafer, yield {:.1f}% -> die {:.0f} USD; memory {:.0f} USD; "
             "package {:.0f} USD; total {:.0f} USD\n",
             cost.die.dies_per_wafer, 100.0 * cost.die.yield, cost.die.die_cost_usd,
             cost.memory_cost_usd, cost.package_cost_usd, cost.total_cost_usd);
}

}  // namespace inferlab
