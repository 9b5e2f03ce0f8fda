#pragma once
#include <string>

#include "fit/fit_calibrated.hpp"
#include "fit/fit_delay_factors.hpp"
#include "fit/fit_inputs.hpp"

namespace inferlab {

// How a fit was asked for, as the fitted file's "source" records it.
struct FitRequest {
  std::string profile;    // the --profile the ceilings came from
  std::string data;       // the reference file ("" when none)
  std::string sustained;  // the sustained-clock measurement ("" when none; calibrated only)
};

// `fit --cost calibrated`: the calibrated model's parameters fitted to the fit split, with the
// sustained-compute slowdown from `request.sustained` (read first, so that a bad file fails
// before the seconds-long fit), the source and the per-group summary (data/calibrated/ form).
CalibratedFit run_calibrated_fit(const HardwareSpec& hardware, const FitInputs& inputs,
                                 const FitRequest& request);

// `fit --cost roofline`: delay factors fitted to the fit split (data/delay_factors/ form).
DelayFactorFit run_delay_factor_fit(const HardwareSpec& hardware, const FitInputs& inputs,
                                    const FitRequest& request);

}  // namespace inferlab
