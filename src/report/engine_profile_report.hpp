#pragma once
// `inferlab bench --profile`'s output: one object per (model, hardware, switches) with a point per
// measured step shape — the file `inferlab fit --engine` and `validate --engine` read.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/engine_profile.hpp"

namespace inferlab {

struct EngineProfileSetup {
  std::string model, hardware, device_name, measured_at;
  nlohmann::json switches;  // gemv, fusion, cuda_graphs, attention, weights, kv, activations
};

nlohmann::json engine_profile_json(const EngineProfileSetup& setup,
                                   const std::vector<engine::ProfileMeasurement>& points);
std::string engine_profile_text(const nlohmann::json& profile);

}  // namespace inferlab
