#include "fit/validation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "cost/roofline.hpp"
#include "fit/reference_data.hpp"
#include "model/model_config.hpp"
#include "predict/step_predictor.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab {

namespace {

void summarize_groups(ValidationReport& report) {
  for (const auto& c : report.cases) {
    GroupAccuracy& g = report.groups[c.group];
    ++g.cases;
    g.mape += std::fabs(c.error());
    if (std::fabs(c.error()) > std::fabs(g.worst_error)) g.worst_error = c.error();
  }
  for (auto& [name, g] : report.groups) g.mape /= g.cases;
}

// Whole steps are held out unless a row says "split": "fit" (a reference whose split was fixed
// before measuring, e.g. validation/tp_reference.py's grids: one model to choose the method on,
// another held out).
void add_steps(ValidationReport& report, const nlohmann::json& steps, const std::string& ctx,
               const CostModel& cost, const HostOverhead& host, SplitFilter split) {
  std::map<std::string, ModelConfig> models;
  for (const auto& row : steps) {
    const bool held_out = row.value("split", std::string("holdout")) != "fit";
    if ((split == SplitFilter::fit && held_out) || (split == SplitFilter::holdout && !held_out)) {
      continue;
    }
    std::string name = require_string(row, "model", ctx);
    if (!models.count(name)) models.emplace(name, load_model(name));
    const ModelConfig& model = models.at(name);
    std::string phase = require_string(row, "phase", ctx);
    int64_t batch = require_count(row, "batch", ctx);
    StepShape shape;
    if (phase == "prefill") {
      int64_t tokens = require_count(row, "tokens", ctx);
      shape = {Phase::prefill, batch, tokens, tokens};
    } else if (phase == "decode") {
      shape = {Phase::decode, batch, 1, require_count(row, "context", ctx)};
    } else {
      throw InputError(ctx + ": step phase must be prefill or decode, got '" + phase + "'");
    }
    StepContext c;
    c.model = &model;
    c.cost = &cost;
    const std::string layout = row.value("layout", std::string());
    c.plan =
        with_projection_layout(kernel_plan(Framework::pytorch, /*flash_attention=*/true), layout);
    c.framework = Framework::pytorch;
    // Tensor-parallel steps (validation/tp_reference.py) say their degree; the rest ran on one GPU.
    c.shard = shard_dims(
        model, row.contains("tp") ? static_cast<int>(require_count(row, "tp", ctx, 1, 64)) : 1);
    c.host = host;
    for (const char* mode : {"graph", "eager"}) {
      if (!row.contains(mode)) continue;
      c.cuda_graphs = std::string(mode) == "graph";
      double measured = require_number(row[mode], "median_s", ctx + " step " + mode);
      double predicted = predict_step(c, shape).time_s;
      report.cases.push_back(
          {phase + "_" + mode,
           fmt::format("{} {} batch {} {} {}{}{}", name, phase, batch,
                       phase == "prefill" ? "tokens" : "context", shape.context,
                       layout.empty() ? std::string() : fmt::format(" {}", layout),
                       c.shard.tp > 1 ? fmt::format(" tp {}", c.shard.tp) : std::string()),
           measured, predicted, held_out});
    }
  }
}

}  // namespace

IsolatedOpTime roofline_isolated_time(const CostModel& cost, double kernel_latency_s,
                                      double floor_s) {
  return [&cost, kernel_latency_s, floor_s](const Op& op) {
    return floor_isolated_time_s(cost.price(op).time_s, op.kernels, kernel_latency_s, floor_s);
  };
}

IsolatedOpTime isolated_time_for(const LoadedCost& loaded) {
  if (loaded.method == CostMethod::roofline) return {};
  const CostModel* model = loaded.cost.get();
  return [model](const Op& op) { return model->isolated_time_s(op); };
}

SplitFilter parse_split_filter(const std::string& name) {
  if (name == "all") return SplitFilter::all;
  if (name == "fit") return SplitFilter::fit;
  if (name == "holdout") return SplitFilter::holdout;
  throw InputError("--split takes all, fit or holdout, got '" + name + "'");
}

ValidationReport validate_against_reference(const nlohmann::json& reference,
                                            const std::string& context, const CostModel& cost,
                                            double kernel_latency_s, const HostOverhead& host,
                                            IsolatedOpTime isolated, SplitFilter split) {
  ValidationReport report;
  // A reference file has "ops"; a hardware profile (probe output) has "sweeps" of its own.
  const bool is_profile = reference.contains("sweeps") && !reference.contains("ops");
  if (reference.contains("ops") || is_profile) {
    auto measured = is_profile ? measured_ops_from_profile(reference, context)
                               : measured_ops_from_reference(reference, context);
    report.isolated_op_floor_s = fastest_measured_s(measured);
    if (!isolated) {
      isolated = roofline_isolated_time(cost, kernel_latency_s, report.isolated_op_floor_s);
    }
    for (const auto& m : measured) {
      if ((split == SplitFilter::fit && m.held_out) ||
          (split == SplitFilter::holdout && !m.held_out)) {
        continue;
      }
      OpCost c = cost.price(m.op);
      report.cases.push_back({std::string(op_class_name(c.op_class)), m.label, m.measured_s,
                              isolated(m.op), m.held_out});
    }
  }
  // Whole steps are never fitted: always held out. A family run keeps its steps in other
  // projection layouts under "fused_steps" until they are merged into "steps".
  for (const char* key : {"steps", "fused_steps"}) {
    if (reference.contains(key)) add_steps(report, reference[key], context, cost, host, split);
  }
  if (report.cases.empty()) {
    throw InputError(context + ": no 'ops', 'steps' or probe 'sweeps' to validate");
  }
  summarize_groups(report);
  return report;
}

std::vector<std::string> groups_over_bounds(const ValidationReport& report,
                                            const std::string& bounds) {
  std::vector<std::string> over;
  std::stringstream list(bounds);
  std::string item;
  while (std::getline(list, item, ',')) {
    auto eq = item.find('=');
    if (eq == std::string::npos) {
      throw InputError("--max-mape expects group=fraction (e.g. gemm=0.05), got '" + item + "'");
    }
    std::string group = item.substr(0, eq);
    char* end = nullptr;
    double bound = std::strtod(item.c_str() + eq + 1, &end);
    if (end == item.c_str() + eq + 1 || *end != '\0' || !(bound > 0.0)) {
      throw InputError("--max-mape bound for '" + group + "' must be a positive fraction");
    }
    auto it = report.groups.find(group);
    if (it == report.groups.end()) {
      std::vector<std::string> known;
      for (const auto& [name, g] : report.groups) known.push_back(name);
      throw InputError("--max-mape names group '" + group +
                       "'; this data has: " + join_names(known));
    }
    if (it->second.mape > bound) {
      over.push_back(
          fmt::format("{} MAPE {:.1f}% > {:.1f}%", group, 100 * it->second.mape, 100 * bound));
    }
  }
  return over;
}

}  // namespace inferlab
