#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/table.hpp"
#include "serve/capacity_plan.hpp"

namespace inferlab {

// `capacity`: the plan's request (model, SLO, engine, workload) and each configuration's
// outcome, cheapest first.
nlohmann::json capacity_json(const CapacityPlanRequest& plan,
                             const std::vector<CapacityOutcome>& outcomes);
Table capacity_table(const std::vector<CapacityOutcome>& outcomes);

}  // namespace inferlab
