#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "predict/simulation.hpp"

namespace inferlab {

// One `simulate` run: the step on a hardware template and what it was asked for.
struct SimulateRun {
  std::string model, hardware, hardware_display_name;
  int devices = 1, tp = 1, pp = 1;
  std::string phase;  // prefill | decode
  int64_t batch = 1;
  int64_t context = 0;  // prefill: tokens per sequence; decode: tokens attended
  const SimulationResult* result = nullptr;
  double flash_s = 0.0, unfused_s = 0.0;  // the step with each form of attention
};

// JSON (output contract of `simulate`): the step, its stages, memory and every operator with
// the mapping chosen and where its time goes.
nlohmann::json simulate_json(const SimulateRun& run);
// Text: a summary line, then one row per operator; CSV: those rows.
std::string simulate_text(const SimulateRun& run);
std::string simulate_csv(const SimulateRun& run);

}  // namespace inferlab
