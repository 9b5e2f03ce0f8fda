#pragma once
#include <nlohmann/json.hpp>
#include <vector>

#include "hw/hardware_spec.hpp"
#include "hw/hardware_template.hpp"
#include "model/model_config.hpp"
#include "report/table.hpp"

namespace inferlab {

// `models`: the shipped models with their key numbers. The CSV table carries the parameter
// count as a whole number, the text table in human units.
nlohmann::json models_json(const std::vector<ModelConfig>& models);
Table models_table(const std::vector<ModelConfig>& models, OutputFormat format);

// `hardware`: the shipped GPU spec sheets.
nlohmann::json hardware_json(const std::vector<HardwareSpec>& sheets);
Table hardware_table(const std::vector<HardwareSpec>& sheets);

// `templates`: the shipped hardware templates.
nlohmann::json templates_json(const std::vector<HardwareTemplate>& templates);
Table templates_table(const std::vector<HardwareTemplate>& templates);

}  // namespace inferlab
