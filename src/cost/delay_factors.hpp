#pragma once
#include <array>
#include <string>

#include "cost/cost_model.hpp"
#include "hw/hardware_spec.hpp"

namespace inferlab {

// Per-class delay factors (measured time over ideal roofline time) and the fixed GPU-side cost
// of one kernel. The shipped defaults were fitted from PyTorch measurements on an H100 (see
// data/delay_factors.json, its "source"); users override one class with --delay-factor.
struct DelayFactors {
  std::array<double, kOpClassCount> factor{};
  double kernel_latency_s = 0.0;
  // Below this many rows (tokens), a projection is priced as a GEMV: weight streaming.
  int64_t gemv_max_rows = kGemvMaxRows;
  std::string source;

  double of(OpClass cls) const { return factor[static_cast<int>(cls)]; }
  void set(OpClass cls, double value);  // throws InputError unless 0.1 <= value <= 100
};

// Reads a delay-factor file (data/delay_factors/*.json form).
DelayFactors load_delay_factors_file(const std::string& path);

// The factors that match where the hardware's ceilings come from: data/delay_factors/<name>.json
// when the ceilings are a measured profile and that GPU has a fit, data/delay_factors/spec.json
// (fitted against datasheet ceilings) otherwise.
DelayFactors load_delay_factors(const HardwareSpec& hardware);
// data/delay_factors/spec.json.
DelayFactors load_spec_delay_factors();
// Applies "class=value[,class=value...]" overrides.
void apply_delay_factor_overrides(DelayFactors& factors, const std::string& overrides);

}  // namespace inferlab
