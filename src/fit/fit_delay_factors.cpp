#include "fit/fit_delay_factors.hpp"

#include <algorithm>
#include <cmath>

#include "util/error.hpp"

namespace inferlab {

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

DelayFactorFit fit_delay_factors(const HardwareSpec& hardware, const DelayFactors& start,
                                 const std::vector<MeasuredOp>& measured, double min_roofline_s) {
  if (measured.empty()) throw InputError("no measured operators to fit");
  DelayFactors unit = start;
  unit.factor.fill(1.0);
  unit.kernel_latency_s = 0.0;
  RooflineCostModel roofline(hardware, unit);

  DelayFactorFit fit;
  fit.factors = start;
  fit.single_op_floor_s = fastest_measured_s(measured);
  fit.factors.single_op_floor_s = fit.single_op_floor_s;

  std::array<std::vector<double>, kOpClassCount> ratios;
  std::array<std::vector<std::pair<double, double>>, kOpClassCount> points;  // roofline, measured
  for (const auto& m : measured) {
    OpCost c = roofline.price(m.op);
    if (c.time_s < min_roofline_s) continue;
    int cls = static_cast<int>(c.op_class);
    ratios[cls].push_back((m.measured_s - fit.single_op_floor_s) / c.time_s);
    points[cls].push_back({c.time_s, m.measured_s});
  }
  for (int cls = 0; cls < kOpClassCount; ++cls) {
    if (ratios[cls].empty()) continue;
    ClassFit& cf = fit.classes[cls];
    cf.points = static_cast<int>(ratios[cls].size());
    cf.factor = std::clamp(median(ratios[cls]), 0.1, 100.0);
    double sum = 0.0;
    for (auto [roof, meas] : points[cls]) {
      double predicted = cf.factor * roof + fit.single_op_floor_s;
      double err = std::fabs(predicted - meas) / meas;
      sum += err;
      cf.worst_error = std::max(cf.worst_error, err);
    }
    cf.mape = sum / cf.points;
    fit.factors.set(static_cast<OpClass>(cls), cf.factor);
  }
  return fit;
}

nlohmann::json class_fit_summary(const DelayFactorFit& fit) {
  nlohmann::json classes = nlohmann::json::object();
  for (int i = 0; i < kOpClassCount; ++i) {
    const ClassFit& cf = fit.classes[i];
    classes[std::string(op_class_name(static_cast<OpClass>(i)))] = {
        {"points", cf.points},
        {"factor", fit.factors.of(static_cast<OpClass>(i))},
        {"mape", cf.mape},
        {"worst_error", cf.worst_error}};
  }
  return classes;
}

}  // namespace inferlab
