#pragma once
#include <nlohmann/json.hpp>
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

}  // namespace inferlab
