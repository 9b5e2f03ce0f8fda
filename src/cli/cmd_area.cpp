#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "report/area_report.hpp"
#include "report/emit.hpp"

namespace inferlab::cli {

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
    emit(area_json(hw, area, cost), area_text(hw, area, cost), area_table(area).to_csv(), f);
  });
}

}  // namespace inferlab::cli
