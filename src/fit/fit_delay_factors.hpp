#pragma once
#include <array>
#include <nlohmann/json.hpp>
#include <vector>

#include "cost/roofline.hpp"
#include "fit/reference_data.hpp"

namespace inferlab {

struct ClassFit {
  int points = 0;            // measurements used (roofline time >= min_roofline_s)
  double factor = 1.0;       // median of (measured - single_op_floor) / roofline
  double mape = 0.0;         // of the fitted model on those points
  double worst_error = 0.0;  // largest |predicted - measured| / measured
};

struct DelayFactorFit {
  DelayFactors factors;
  std::array<ClassFit, kOpClassCount> classes{};
  double single_op_floor_s = 0.0;  // the fastest measurement: launch + event overhead
};

// Fits one delay factor per class: measured ~ factor x roofline + floor, where roofline is the
// model's time with factor 1 and no latency, and floor is the fastest measured op (what a
// single event-timed kernel costs with no work). Classes without points keep `start`'s factor.
DelayFactorFit fit_delay_factors(const HardwareSpec& hardware, const DelayFactors& start,
                                 const std::vector<MeasuredOp>& measured,
                                 double min_roofline_s = 5e-6);

// What each class was fitted to (points, factor, mape, worst_error): the fitted file's "fit".
nlohmann::json class_fit_summary(const DelayFactorFit& fit);

}  // namespace inferlab
