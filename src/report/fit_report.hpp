#pragma once
#include <string>

#include "fit/fit_run.hpp"
#include "report/table.hpp"

namespace inferlab {

// `fit --cost calibrated`: JSON is the fitted file itself (calibrated_params_to_json); the
// table has each group's points and MAPE, and the text adds the fitted parameters under it.
Table calibrated_fit_table(const CalibratedFit& fit);
std::string calibrated_fit_text(const CalibratedFit& fit);

// `fit --cost roofline`: JSON is the fitted file (delay_factor_fit_json); one row per class.
Table delay_factor_fit_table(const DelayFactorFit& fit);

}  // namespace inferlab
