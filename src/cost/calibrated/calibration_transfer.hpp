#pragma once
#include <optional>
#include <string>

#include "cost/calibrated/calibrated_params.hpp"
#include "hw/hardware_spec.hpp"

namespace inferlab {

// Moves a calibration fitted on `source` (with its measured ceilings) to `target`: when the
// target has no measured profile its ceilings become its datasheet figures times the source's
// measured-to-datasheet ratios (the share of the datasheet its silicon and software reach);
// per-CTA streaming rates scale with the clock ratio. Efficiencies and fixed times carry over.
CalibratedParams transfer_calibration(const CalibratedParams& params, const HardwareSpec& source,
                                      HardwareSpec& target);

// The calibration that applies to `target`: `requested` (a calibrated GPU's name, or a path:
// anything with a slash or ending in .json), else data/calibrated/<gpu>.json, else that of a
// calibrated GPU of the same architecture; moved to `target` by transfer_calibration when it
// was fitted on another GPU (which then updates `target`'s ceilings). Empty when none applies.
std::optional<CalibratedParams> calibration_for(HardwareSpec& target, const std::string& requested);

}  // namespace inferlab
