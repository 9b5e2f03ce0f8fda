#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "explore/design_space.hpp"
#include "report/table.hpp"
#include "report/xy_chart_svg.hpp"

namespace inferlab {

// `explore`: every design with its cost and throughput, and the Pareto front.
nlohmann::json explore_json(const ExploreRequest& request, const std::vector<DesignPoint>& points);
Table explore_table(const std::vector<DesignPoint>& points);
// System cost against tokens/s: every design, and the front joined in cost order.
XyChart pareto_chart(const ExploreRequest& request, const std::vector<DesignPoint>& points);

}  // namespace inferlab
