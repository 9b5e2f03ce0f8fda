#pragma once
#include <array>
#include <nlohmann/json.hpp>
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
  // The fastest operator timed alone (CUDA events, launch included) among those the factors
  // were fitted to: the fixed cost of one call timed alone. 0 when the file does not say.
  double single_op_floor_s = 0.0;
  std::string source;

  double of(OpClass cls) const { return factor[static_cast<int>(cls)]; }
  void set(OpClass cls, double value);  // throws InputError unless 0.1 <= value <= 100
};

// Reads a delay-factor file (data/delay_factors/*.json form).
DelayFactors load_delay_factors_file(const std::string& path);
// The file's form; `fit_summary` (what each class was fitted to) goes under "fit".
nlohmann::json delay_factors_to_json(const DelayFactors& factors,
                                     const nlohmann::json& fit_summary);
// Writes delay_factors_to_json to `path`; InputError when it cannot.
void write_delay_factors_file(const std::string& path, const DelayFactors& factors,
                              const nlohmann::json& fit_summary);

// The factors that match where the hardware's ceilings come from: data/delay_factors/<name>.json
// when the ceilings are a measured profile and that GPU has a fit, data/delay_factors/spec.json
// (fitted against datasheet ceilings) otherwise.
DelayFactors load_delay_factors(const HardwareSpec& hardware);
// data/delay_factors/spec.json.
DelayFactors load_spec_delay_factors();
// Applies "class=value[,class=value...]" overrides.
void apply_delay_factor_overrides(DelayFactors& factors, const std::string& overrides);

}  // namespace inferlab
