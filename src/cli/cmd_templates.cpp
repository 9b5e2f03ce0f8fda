#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "report/catalog_report.hpp"
#include "report/emit.hpp"

namespace inferlab::cli {

void register_templates(CLI::App& app) {
  auto format = std::make_shared<std::string>("table");
  CLI::App* cmd =
      app.add_subcommand("templates",
                         "List the hardware templates (data/templates/) that simulate, area and "
                         "explore run, and --cost tilesim prices on");
  cmd->add_option("--format", *format, "table, json or csv")->capture_default_str();
  cmd->callback([format] {
    OutputFormat f = parse_output_format(*format);
    std::vector<HardwareTemplate> list;
    for (const auto& name : known_templates()) list.push_back(load_hardware_template(name));
    emit(templates_json(list), templates_table(list), f);
  });
}

}  // namespace inferlab::cli
