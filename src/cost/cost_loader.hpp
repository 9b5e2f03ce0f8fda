#pragma once
#include <memory>
#include <string>

#include "cost/calibrated.hpp"
#include "cost/cost_model.hpp"
#include "cost/delay_factors.hpp"
#include "cost/tilesim/tilesim_cost.hpp"
#include "hw/hardware_spec.hpp"

namespace inferlab {

// Which cost model prices operators: the roofline with delay factors, the calibrated model,
// or auto (calibrated where a calibration applies to the GPU, roofline otherwise).
inline constexpr const char* kCostAuto = "auto";

struct LoadedCost {
  HardwareSpec spec;  // the ceilings the model prices against
  std::unique_ptr<CostModel> cost;
  DelayFactors factors;  // the roofline's (and the calibrated model's collectives')
  std::string source;    // where the model's constants come from, for reports
  const CalibratedCostModel* calibrated = nullptr;  // set when cost is calibrated
  const TileSimCostModel* tilesim = nullptr;        // set when cost is tilesim
};

// `cost`: roofline | calibrated | tilesim | auto. tilesim runs the hardware template of that
// name (data/templates/), which may have no spec sheet (a what-if design). The calibrated model
// uses data/calibrated/<gpu>.json, or, for a GPU without one, the calibration of a GPU of the same
// architecture transferred by spec-sheet ratios (see transfer_calibration). `calibration` names a
// GPU or a file to use instead (empty: the rule above). InputError for unknown names or when
// nothing applies.
LoadedCost load_cost(const std::string& hardware, const std::string& profile,
                     const std::string& cost, const std::string& delay_overrides = "",
                     const std::string& calibration = "");

// Moves a calibration fitted on `source` (with its measured ceilings) to `target`: when the
// target has no measured profile its ceilings become its datasheet figures times the source's
// measured-to-datasheet ratios (the share of the datasheet its silicon and software reach);
// per-CTA streaming rates scale with the clock ratio. Efficiencies and fixed times carry over.
CalibratedParams transfer_calibration(const CalibratedParams& params, const HardwareSpec& source,
                                      HardwareSpec& target);

}  // namespace inferlab
