#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cost/delay_factors.hpp"
#include "fit/reference_data.hpp"
#include "hw/hardware_spec.hpp"

namespace inferlab {

// What `inferlab fit` fits: the operators measured with PyTorch (a reference file from
// validation/torch_reference.py) and the probe's sweeps in the hardware's measured profile,
// with the constants measured beside them.
struct FitInputs {
  std::vector<MeasuredOp> measured;  // the reference file's rows, then the profile's sweeps
  std::vector<std::string> sources;  // where each part came from, for the fitted file's source
  // The isolated-event floor: the fastest fit-split operator of the reference file, timed alone
  // (0 without a reference file). Held-out rows never enter it, nor anything else fitted.
  double isolated_floor_s = 0.0;
  // The spec-sheet delay factors with the fixed cost of a kernel in a graph as measured: the
  // reference file's launch figure, or the profile's small kernel in a graph (else its
  // empty-kernel gap, a lower bound).
  DelayFactors start;
  int held_out = 0;  // measurements in the held-out split (never fitted)
};

// Gathers the inputs from a reference file (`reference_path`, may be empty) and the measured
// profile `hardware` carries (if any). InputError when there is nothing to fit.
FitInputs gather_fit_inputs(const HardwareSpec& hardware, const std::string& reference_path);
// The same from a reference document already read (`reference` may be null).
FitInputs gather_fit_inputs(const HardwareSpec& hardware, const nlohmann::json* reference,
                            const std::string& reference_path);

// The fit split: the measurements that are not held out, in order.
std::vector<MeasuredOp> fit_split(const std::vector<MeasuredOp>& measured);

}  // namespace inferlab
