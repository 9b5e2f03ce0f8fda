#pragma once
#include <string>
#include <vector>

#include "cost/calibrated/calibrated_cost.hpp"
#include "fit/reference_data.hpp"

namespace inferlab {

// Which parameters a measured op informs: the groups are fitted one after the other.
enum class CalibGroup {
  elementwise,
  norm,
  softmax,
  attention_prefill,
  attention_decode,
  gemm,
  rope,
  strided_elementwise  // elementwise ops on strided views (SiLU x mul on fused gate/up halves)
};
std::string_view calib_group_name(CalibGroup group);
CalibGroup calib_group_of(const Op& op);

struct CalibGroupFit {
  CalibGroup group;
  int points = 0;     // measurements fitted (the held-out ones never are)
  double mape = 0.0;  // on those points
  int evaluations = 0;
};

struct CalibratedFit {
  CalibratedParams params;
  std::vector<CalibGroupFit> groups;
};

// Fits the calibrated model to ops measured alone (CUDA events after an L2 flush): each op's
// isolated time is modelled by CalibratedCostModel::isolated_time_s. The event overhead is
// not fitted: it is `isolated_floor_s` (the fastest op timed alone) minus the profile's small
// kernel in a graph. Groups are fitted one after the other; the GEMM group also fits the
// share of dirty L2 written back, the elementwise group the launch wait of multi-kernel ops.
// Minimises the mean squared log error of each group by Nelder-Mead over the logarithms of its
// parameters. Held-out ops are skipped. Deterministic.
CalibratedFit fit_calibrated(const HardwareSpec& hardware, const DelayFactors& comm_factors,
                             const std::vector<MeasuredOp>& measured, double isolated_floor_s);

}  // namespace inferlab
