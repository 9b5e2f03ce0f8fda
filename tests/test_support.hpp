#pragma once
#include <string>

#include "cost/delay_factors.hpp"

namespace inferlab::testing {

// Delay factors of 1 and a chosen kernel latency: hand-worked roofline numbers in tests do not
// depend on the shipped, measured factors.
inline DelayFactors unit_factors(double kernel_latency_s = 0.0) {
  DelayFactors f;
  f.factor.fill(1.0);
  f.kernel_latency_s = kernel_latency_s;
  f.gemv_max_rows = 16;
  f.source = "test";
  return f;
}

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};
// Runs the inferlab binary with the given argument string (shell-quoted by the caller).
CommandResult run_inferlab(const std::string& args);

// The source tree's data/ folder (absolute): tests that read shipped files directly.
std::string test_data_dir();

}  // namespace inferlab::testing
