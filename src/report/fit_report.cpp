#include "report/fit_report.hpp"

#include <fmt/format.h>

namespace inferlab {

Table calibrated_fit_table(const CalibratedFit& fit) {
  Table table({"group", "points", "mape"});
  for (const auto& g : fit.groups) {
    table.add_row({std::string(calib_group_name(g.group)), std::to_string(g.points),
                   g.points ? format_fixed(100 * g.mape, 1) + "%" : "-"});
  }
  return table;
}

std::string calibrated_fit_text(const CalibratedFit& fit) {
  std::string text = calibrated_fit_table(fit).to_text();
  for (int i = 0; i < kCalibParamCount; ++i) {
    text += fmt::format("  {:28s} {:.6g}\n", calib_param_info(static_cast<CalibParam>(i)).name,
                        fit.params.value[i]);
  }
  return text;
}

Table delay_factor_fit_table(const DelayFactorFit& fit) {
  Table table({"class", "points", "factor", "mape", "worst_error"});
  for (int i = 0; i < kOpClassCount; ++i) {
    auto cls = static_cast<OpClass>(i);
    const ClassFit& cf = fit.classes[i];
    table.add_row({std::string(op_class_name(cls)), std::to_string(cf.points),
                   format_fixed(fit.factors.of(cls), 3),
                   cf.points ? format_fixed(100 * cf.mape, 1) + "%" : "-",
                   cf.points ? format_fixed(100 * cf.worst_error, 1) + "%" : "-"});
  }
  return table;
}

}  // namespace inferlab
