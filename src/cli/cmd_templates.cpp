#include <fmt/format.h>

#include <iostream>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "hw/hardware_template.hpp"

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
    nlohmann::json list = nlohmann::json::array();
    Table table({"name", "design", "node", "cores", "clock_GHz", "bf16_TFLOPS", "memory",
                 "bandwidth_TBps", "global_buffer", "devices"});
    for (const auto& name : known_templates()) {
      HardwareTemplate t = load_hardware_template(name);
      const double bf16 = t.matrix_peak_flops(DType::bf16);
      list.push_back({{"name", t.name},
                      {"display_name", t.display_name},
                      {"base", t.base},
                      {"process_node", t.process_node},
                      {"core_count", t.core_count},
                      {"clock_hz", t.clock_hz},
                      {"bf16_peak_flops_per_s", bf16},
                      {"memory_type", memory_type_name(t.memory.type)},
                      {"memory_bytes", t.memory.capacity_bytes},
                      {"memory_bandwidth_bps", t.memory.bandwidth_bps},
                      {"global_buffer_bytes", t.global_buffer_bytes},
                      {"devices_per_node", t.node.devices}});
      table.add_row({t.name, t.display_name, t.process_node, std::to_string(t.core_count),
                     fmt::format("{:.2f}", t.clock_hz / 1e9), fmt::format("{:.1f}", bf16 / 1e12),
                     fmt::format("{} {}", format_bytes(t.memory.capacity_bytes),
                                 memory_type_name(t.memory.type)),
                     fmt::format("{:.2f}", t.memory.bandwidth_bps / 1e12),
                     format_bytes(t.global_buffer_bytes), std::to_string(t.node.devices)});
    }
    if (f == OutputFormat::json) {
      print_json({{"templates", list}});
    } else {
      std::cout << (f == OutputFormat::csv ? table.to_csv() : table.to_text());
    }
  });
}

}  // namespace inferlab::cli
