#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace inferlab {

// The sustained-compute slowdown measured by validation/sustained_clock.py: the time of a GEMM
// run back to back for seconds over its time when timed alone, taken from the first GEMM shape
// whose alone run kept the idle clock (so the ratio is boost clock against sustained clock).
// Where every alone run was already throttled (the H200 of 2026-11-23: 1590-1830 MHz alone,
// idle 1980), the pair whose alone run kept the highest clock: its ratio is then a lower bound
// (`lower_bound`), since the alone time was already slowed. Malformed files are InputErrors.
struct SustainedSlowdown {
  double slowdown = 1.0;
  double alone_s = 0.0, back_to_back_s = 0.0;
  double idle_mhz = 0.0, alone_mhz = 0.0, sustained_mhz = 0.0;
  bool lower_bound = false;
  std::string shape;  // "m x n x k"
};
SustainedSlowdown sustained_slowdown_from(const nlohmann::json& document,
                                          const std::string& context);

// A sustained-clock measurement file read: its slowdown and a note of how it was measured
// ("sustained-compute slowdown 1.137 = GEMM ... from <shown> (<measured_at>)"). `shown` names
// the file in the note (default: `path`). A missing or malformed file is an InputError.
struct SustainedMeasurement {
  double slowdown = 1.0;
  std::string note;
};
SustainedMeasurement read_sustained_measurement(const std::string& path,
                                                const std::string& shown = "");

// The measurement shipped for a GPU: data/sustained/<hardware_name>.json when there is one.
std::optional<std::string> shipped_sustained_path(const std::string& hardware_name);
// How the shipped measurement is named to users: "data/sustained/<hardware_name>.json".
std::string shipped_sustained_label(const std::string& hardware_name);

}  // namespace inferlab
