#include "fit/validate_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "cost/engine/engine_cost.hpp"
#include "fit/engine_steps.hpp"
#include "model/engine_blocks.hpp"
#include "predict/step_predictor.hpp"
#include "util/error.hpp"

namespace inferlab {

namespace {

void add_to_group(std::map<std::string, GroupAccuracy>& groups, const std::string& name,
                  double error) {
  GroupAccuracy& g = groups[name];
  ++g.cases;
  g.mape += std::fabs(error);
  if (std::fabs(error) > std::fabs(g.worst_error)) g.worst_error = error;
}

void add_unique(std::vector<std::string>& notes, const std::string& note) {
  if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
}

// A class of one point as the profile times it: in a stream, plus the profile marks when the
// engine's calibration prices it (the fallback model has no marks; its in-stream time it is).
double profiled_class_s(const std::vector<const Op*>& ops, const CostModel& cost) {
  const auto* engine = dynamic_cast<const EngineCostModel*>(&cost);
  double total = 0.0;
  for (const Op* op : ops) {
    const double each = engine ? engine->isolated_time_s(*op) : cost.price(*op).time_s;
    total += each * static_cast<double>(op->count);
  }
  return total;
}

void validate_point(const EngineProfile& profile, const EngineProfilePoint& point,
                    const EngineStepSetup& setup, const CostModel& cost, const HostOverhead& host,
                    EngineValidation& out) {
  const std::string combination = engine_switches_label(profile.switches);
  const std::string phase = point.phase == Phase::prefill ? "prefill" : "decode";
  const std::string label = profile.model + " " + point.label();
  // Prefill always runs eagerly; decode replays a graph when the switch is on.
  const bool graphs = point.phase == Phase::decode && profile.switches.cuda_graphs;
  const StepPrediction step = predict_engine_step(setup, point, cost, graphs, host);
  out.steps.push_back(
      {profile.path, combination, phase, label, point.step_s, step.time_s, point.held_out});
  if (const auto* engine = dynamic_cast<const EngineCostModel*>(&cost)) {
    std::vector<Op> ops;
    for (const auto& p : step.ops) ops.push_back(p.op);
    for (const auto& key : engine->unfitted_keys(ops)) {
      add_unique(out.notes, combination + ": " + key);
    }
  }
  std::vector<Op> ops;
  for (const auto& p : step.ops) ops.push_back(p.op);
  for (const auto& measured : point.kernels) {
    const auto class_ops = ops_of_class(ops, measured.kernel);
    if (class_ops.empty()) {
      add_unique(out.notes, fmt::format("{} {}: class {} measured, but the kernel list launches "
                                        "nothing in it",
                                        combination, phase, measured.kernel));
      continue;
    }
    if (!(measured.seconds > 0.0)) continue;
    out.classes.push_back({profile.path, combination, phase, label, measured.kernel,
                           measured.seconds, profiled_class_s(class_ops, cost), measured.launches,
                           predicted_marks(class_ops), point.held_out});
  }
}

}  // namespace

EngineValidation validate_engine(const std::vector<EngineProfile>& profiles,
                                 const EngineCostLoader& load, SplitFilter split) {
  EngineValidation out;
  const HostOverhead host = load_host_overhead();
  std::map<std::string, std::unique_ptr<EngineSetupCache>> caches;
  for (const EngineProfile& profile : profiles) {
    const LoadedCost& loaded = load(profile.hardware);
    out.cost_sources[profile.hardware] = loaded.engine_costs_source.empty()
                                             ? "no engine costs for " + loaded.spec.name +
                                                   ": the " + loaded.cost->name() + " model (" +
                                                   loaded.source + ")"
                                             : loaded.engine_costs_source;
    auto& cache = caches[profile.hardware];
    if (!cache) cache = std::make_unique<EngineSetupCache>(loaded.spec);
    const EngineStepSetup& setup = cache->of(profile);
    for (const EngineProfilePoint& point : profile.points) {
      if ((split == SplitFilter::fit && point.held_out) ||
          (split == SplitFilter::holdout && !point.held_out)) {
        continue;
      }
      validate_point(profile, point, setup, *loaded.cost, host, out);
    }
  }
  if (out.steps.empty()) {
    throw InputError("no engine profile point in the " +
                     std::string(split == SplitFilter::fit ? "fit" : "held-out") + " split");
  }
  for (const auto& s : out.steps) {
    add_to_group(out.groups, s.phase, s.error());
    add_to_group(out.groups, s.combination + " " + s.phase, s.error());
  }
  for (const auto& k : out.classes) add_to_group(out.groups, "kernel:" + k.kernel_class, k.error());
  for (auto& [name, g] : out.groups) g.mape /= g.cases;
  return out;
}

std::vector<std::string> engine_groups_over_bounds(const EngineValidation& report,
                                                   const std::string& bounds) {
  std::vector<std::string> over;
  std::stringstream list(bounds);
  std::string item;
  while (std::getline(list, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      throw InputError("--max-mape expects name=fraction (e.g. prefill=0.05), got '" + item + "'");
    }
    const std::string name = item.substr(0, eq);
    char* end = nullptr;
    const double bound = std::strtod(item.c_str() + eq + 1, &end);
    if (end == item.c_str() + eq + 1 || *end != '\0' || !(bound > 0.0)) {
      throw InputError("--max-mape bound for '" + name + "' must be a positive fraction");
    }
    std::vector<std::string> targets;
    if (name == "prefill" || name == "decode") {
      for (const auto& [group, g] : report.groups) {
        const std::string suffix = " " + name;
        if (group == name ||
            (group.size() > suffix.size() &&
             group.compare(group.size() - suffix.size(), suffix.size(), suffix) == 0)) {
          targets.push_back(group);
        }
      }
    } else if (report.groups.count("kernel:" + name)) {
      targets.push_back("kernel:" + name);
    }
    if (targets.empty()) {
      std::vector<std::string> known;
      for (const auto& [group, g] : report.groups) {
        if (group.rfind("kernel:", 0) == 0) known.push_back(group.substr(7));
      }
      if (report.groups.count("prefill")) known.insert(known.begin(), "prefill");
      if (report.groups.count("decode")) known.insert(known.begin(), "decode");
      throw InputError("--max-mape names '" + name + "'; this data has: " + join_names(known));
    }
    for (const auto& group : targets) {
      const GroupAccuracy& g = report.groups.at(group);
      if (g.mape > bound) {
        over.push_back(fmt::format("{} MAPE {:.1f}% > {:.1f}%", group, 100 * g.mape, 100 * bound));
      }
    }
  }
  return over;
}

}  // namespace inferlab
