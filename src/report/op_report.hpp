#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "cost/cost_model.hpp"
#include "model/op.hpp"

namespace inferlab {

// One operator priced on one device (`inferlab op`).
struct OpReport {
  std::string what;  // the operator's kind as the user named it
  std::string hardware, hardware_source;
  Op op;
  OpCost cost;              // in a stream or graph, back to back
  double isolated_s = 0.0;  // one call timed alone, L2 flushed (CostModel::isolated_time_s)
  nlohmann::json plan;      // CostModel::describe: the tiling or mapping, null when none
};

// JSON (output contract of `op`): the op, its time both ways, where the time goes, its plan.
nlohmann::json op_report_json(const OpReport& report);
// Text: one table row, then the plan in words when there is one.
std::string op_report_text(const OpReport& report);
std::string op_report_csv(const OpReport& report);

}  // namespace inferlab
