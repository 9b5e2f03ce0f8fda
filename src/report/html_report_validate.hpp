#pragma once
#include <string>

#include "fit/validation.hpp"
#include "report/html_report.hpp"

namespace inferlab {

// What `inferlab report --kind validate` shows: one reference file checked against the model.
struct ValidateReportInput {
  std::string title, subtitle;
  std::string provenance;  // where the cost model and the ceilings came from
  const ValidationReport* report = nullptr;
};

// MAPE per group as figures and a table, then one predicted-vs-measured chart per group
// (log-log, y = x, +-10% band), and the cases furthest off.
HtmlPage validate_html_page(const ValidateReportInput& input);

}  // namespace inferlab
