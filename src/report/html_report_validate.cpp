#include "report/html_report_validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "report/html_report_charts.hpp"
#include "report/table.hpp"

namespace inferlab {

namespace {

// Cases listed in the "furthest off" table.
constexpr size_t kWorstCases = 25;

std::string percent(double fraction, bool sign = false) {
  return sign ? fmt::format("{:+.1f}%", 100 * fraction) : fmt::format("{:.1f}%", 100 * fraction);
}

}  // namespace

HtmlPage validate_html_page(const ValidateReportInput& in) {
  const ValidationReport& report = *in.report;
  HtmlPage page;
  page.title = in.title;
  page.subtitle = in.subtitle;
  std::vector<std::vector<std::string>> rows;
  for (const auto& [name, g] : report.groups) {
    page.figures.push_back(
        {name, percent(g.mape),
         fmt::format("MAPE, {} cases; worst {}", g.cases, percent(g.worst_error, true)),
         g.mape > 0.10});
    rows.push_back({name, std::to_string(g.cases), percent(g.mape), percent(g.worst_error, true)});
  }
  page.sections.push_back({"Accuracy per group",
                           "MAPE: mean of |predicted - measured| / measured over the group's "
                           "cases. Worst: the signed error largest in magnitude.",
                           html_table({"group", "cases", "MAPE", "worst"}, rows, {1, 2, 3}),
                           false});
  for (const auto& [name, g] : report.groups) {
    ParityChart chart{name,
                      fmt::format("{} cases; MAPE {}; worst {}", g.cases, percent(g.mape),
                                  percent(g.worst_error, true)),
                      "ms",
                      {}};
    for (const auto& c : report.cases) {
      if (c.group == name)
        chart.points.push_back({c.measured_s * 1e3, c.predicted_s * 1e3, c.label});
    }
    if (chart.points.empty()) continue;
    page.sections.push_back({name + ": predicted vs measured",
                             "Log-log; the green line is y = x and the band \u00b110%; red points "
                             "are off by more than 10%.",
                             render_parity_svg(chart), true});
  }
  std::vector<const ValidationCase*> worst;
  for (const auto& c : report.cases) worst.push_back(&c);
  std::stable_sort(worst.begin(), worst.end(),
                   [](const ValidationCase* a, const ValidationCase* b) {
                     return std::fabs(a->error()) > std::fabs(b->error());
                   });
  if (worst.size() > kWorstCases) worst.resize(kWorstCases);
  std::vector<std::vector<std::string>> worst_rows;
  for (const ValidationCase* c : worst) {
    worst_rows.push_back({c->group, c->label, fmt::format("{:.4f}", c->measured_s * 1e3),
                          fmt::format("{:.4f}", c->predicted_s * 1e3), percent(c->error(), true)});
  }
  page.sections.push_back({"Cases furthest off",
                           fmt::format("The {} cases with the largest |error| of {}.", worst.size(),
                                       report.cases.size()),
                           "<div class=\"scroll\">" +
                               html_table({"group", "case", "measured ms", "predicted ms", "error"},
                                          worst_rows, {2, 3, 4}) +
                               "</div>",
                           false});
  if (!in.provenance.empty()) {
    page.sections.push_back(
        {"Provenance", "", "<p class=\"intro\">" + html_escape(in.provenance) + "</p>", false});
  }
  page.footer = "Written by inferlab report --kind validate.";
  return page;
}

}  // namespace inferlab
