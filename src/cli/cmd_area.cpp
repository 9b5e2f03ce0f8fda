#include <fmt/format.h>

#include <iostream>

#include "area/area_model.hpp"
#include "area/die_cost.hpp"
#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {
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
}  // namespace

void register_area(CLI::App& app) {
  auto hardware = std::make_shared<std::string>("h100-sxm");
  auto format = std::make_shared<std::string>("table");
  CLI::App* cmd = app.add_subcommand(
      "area",
      "Die area part by part, die cost (wafer, yield), memory and package cost of a "
      "hardware template (data/templates/)");
  cmd->add_option("--hardware", *hardware, "Hardware template name or path")->capture_default_str();
  cmd->add_option("--format", *format, "table, json or csv")->capture_default_str();
  cmd->callback([hardware, format] {
    OutputFormat f = parse_output_format(*format);
    HardwareTemplate hw = load_hardware_template(*hardware);
    AreaEstimate area = estimate_area(hw);
    DeviceCost cost = device_cost(hw, area);
    if (f == OutputFormat::json) {
      print_json(area_json(hw, area, cost));
      return;
    }
    Table t({"component", "area_mm2", "share", "basis"});
    for (const auto& part : area.components) {
      t.add_row({part.name, format_fixed(part.area_mm2, 1),
                 format_fixed(100.0 * part.area_mm2 / area.die_area_mm2, 1) + "%", part.basis});
    }
    if (f == OutputFormat::csv) {
      std::cout << t.to_csv();
      return;
    }
    std::string published;
    if (hw.published_die_area_mm2 > 0.0) {
      published = fmt::format(" (published {:.0f} mm^2, {:+.1f}%)", hw.published_die_area_mm2,
                              100.0 * (area.die_area_mm2 / hw.published_die_area_mm2 - 1.0));
    }
    std::cout << fmt::format("{} at {}: die {:.0f} mm^2{}\n\n", hw.display_name, area.process_node,
                             area.die_area_mm2, published)
              << t.to_text()
              << fmt::format(
                     "\n{:.1f} dies per wafer, yield {:.1f}% -> die {:.0f} USD; memory {:.0f} USD; "
                     "package {:.0f} USD; total {:.0f} USD\n",
                     cost.die.dies_per_wafer, 100.0 * cost.die.yield, cost.die.die_cost_usd,
                     cost.memory_cost_usd, cost.package_cost_usd, cost.total_cost_usd);
  });
}

}  // namespace inferlab::cli
