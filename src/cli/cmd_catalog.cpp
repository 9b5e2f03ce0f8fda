#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "report/catalog_report.hpp"
#include "report/emit.hpp"

namespace inferlab::cli {

void register_catalog(CLI::App& app) {
  auto args = std::make_shared<CommonArgs>();
  CLI::App* models = app.add_subcommand("models", "Shipped models with their key numbers");
  add_format_option(models, *args);
  models->callback([args] {
    OutputFormat format = parse_output_format(args->format);
    std::vector<ModelConfig> list;
    for (const auto& name : known_models()) list.push_back(load_model(name));
    emit(models_json(list), models_table(list, format), format);
  });

  CLI::App* hardware = app.add_subcommand("hardware", "Shipped GPU spec sheets");
  add_format_option(hardware, *args);
  hardware->callback([args] {
    OutputFormat format = parse_output_format(args->format);
    std::vector<HardwareSpec> list;
    for (const auto& name : known_hardware()) list.push_back(load_hardware(name));
    emit(hardware_json(list), hardware_table(list), format);
  });
}

}  // namespace inferlab::cli
