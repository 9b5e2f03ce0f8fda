#pragma once
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cost/cost_loader.hpp"
#include "cost/cost_model.hpp"
#include "predict/framework.hpp"

namespace inferlab {

// One measured case and its prediction.
struct ValidationCase {
  std::string group;  // op class ("gemm", ...) or step group ("decode_graph", ...)
  std::string label;
  double measured_s = 0.0, predicted_s = 0.0;
  bool held_out = true;  // whole steps are never fitted: always held out
  double error() const { return (predicted_s - measured_s) / measured_s; }
};

struct GroupAccuracy {
  int cases = 0;
  double mape = 0.0;
  double worst_error = 0.0;  // signed, the largest in magnitude
};

struct ValidationReport {
  std::vector<ValidationCase> cases;
  std::map<std::string, GroupAccuracy> groups;
  double isolated_op_floor_s = 0.0;
};

// How an operator timed alone (CUDA events around one call) is predicted from the cost model.
using IsolatedOpTime = std::function<double(const Op&)>;
// For the roofline model: an operator timed alone carries a fixed launch-and-event cost
// instead of the in-stream kernel latency; that cost is the fastest measurement of the file
// (`floor_s`), added to the predicted in-stream time minus the kernel latency.
IsolatedOpTime roofline_isolated_time(const CostModel& cost, double kernel_latency_s,
                                      double floor_s);

// What `validate` prices an operator timed alone with: the model's own isolated time
// (CostModel::isolated_time_s), except for the roofline, whose fixed cost of one timed call is
// the fastest operator of the file being checked (empty: roofline_isolated_time).
IsolatedOpTime isolated_time_for(const LoadedCost& loaded);

enum class SplitFilter { all, fit, holdout };
SplitFilter parse_split_filter(const std::string& name);  // all | fit | holdout

// Predicts every operator and whole step of a reference file (validation/torch_reference.py or
// tp_reference.py output) with `cost`. Steps run the PyTorch kernel plan on one GPU, or on the
// shard of the row's "tp": CUDA graphs on against the graph replay, off against the eager run.
// `isolated` prices the operators; when empty, roofline_isolated_time with the model's kernel
// latency is used. `split` keeps the fitted operators, the held-out ones, or all; steps are
// held out unless their row says "split": "fit" (a split fixed before they were measured).
ValidationReport validate_against_reference(const nlohmann::json& reference,
                                            const std::string& context, const CostModel& cost,
                                            double kernel_latency_s, const HostOverhead& host,
                                            IsolatedOpTime isolated = {},
                                            SplitFilter split = SplitFilter::all);

// Parses "group=fraction[,group=fraction...]" bounds and lists the groups that exceed theirs.
// A bound naming a group the report does not have is an InputError.
std::vector<std::string> groups_over_bounds(const ValidationReport& report,
                                            const std::string& bounds);

}  // namespace inferlab
