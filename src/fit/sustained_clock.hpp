#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace inferlab {

// The sustained-compute slowdown measured by validation/sustained_clock.py: the time of a GEMM
// run back to back for seconds over its time when timed alone, taken from the first GEMM shape
// whose alone run kept the idle clock (so the ratio is boost clock against sustained clock).
// Malformed files, or files where no alone run kept the clock, are InputErrors.
struct SustainedSlowdown {
  double slowdown = 1.0;
  double alone_s = 0.0, back_to_back_s = 0.0;
  double idle_mhz = 0.0, sustained_mhz = 0.0;
  std::string shape;  // "m x n x k"
};
SustainedSlowdown sustained_slowdown_from(const nlohmann::json& document,
                                          const std::string& context);

}  // namespace inferlab
