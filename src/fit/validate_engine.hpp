#pragma once
// `inferlab validate --engine`: `predict --framework inferlab` set beside the engine's own
// profiles, whole steps per switch combination and phase, and each kernel class.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cost/cost_loader.hpp"
#include "fit/engine_profile.hpp"
#include "fit/validation.hpp"

namespace inferlab {

struct EngineStepCase {
  std::string file, combination, phase, label;
  double measured_s = 0.0, predicted_s = 0.0;
  bool held_out = false;
  double error() const { return (predicted_s - measured_s) / measured_s; }
};

// One kernel class of one profiled point: measured, and predicted as the profile times it (the
// class's ops in a stream plus their profile marks when the engine's calibration prices them).
struct EngineClassCase {
  std::string file, combination, phase, label, kernel_class;
  double measured_s = 0.0, predicted_s = 0.0;
  int64_t measured_calls = 0, predicted_calls = 0;
  bool held_out = false;
  double error() const { return (predicted_s - measured_s) / measured_s; }
};

struct EngineValidation {
  std::vector<EngineStepCase> steps;
  std::vector<EngineClassCase> classes;
  // Steps: "prefill", "decode" (every combination) and "<combination> prefill|decode";
  // classes: "kernel:<class>" (every combination and phase).
  std::map<std::string, GroupAccuracy> groups;
  std::vector<std::string> notes;  // classes measured but not launched, keys not fitted, ...
  std::map<std::string, std::string> cost_sources;  // hardware -> what priced it
};

// Loads the cost model a hardware's profiles are priced with (cached by the caller).
using EngineCostLoader = std::function<const LoadedCost&(const std::string& hardware)>;

// Every point of `profiles` (those `split` keeps) predicted with the cost model `load` gives
// for the profile's hardware. Kernel classes are compared where a profiled pass exists.
EngineValidation validate_engine(const std::vector<EngineProfile>& profiles,
                                 const EngineCostLoader& load, SplitFilter split);

// "prefill=0.05,decode=0.05,gemm_qkv=0.1": a phase bound holds for the phase over all
// combinations and for every combination's phase group; a class bound for "kernel:<class>".
// Returns the groups over their bounds. InputError for a malformed item or a name with no
// group in the report.
std::vector<std::string> engine_groups_over_bounds(const EngineValidation& report,
                                                   const std::string& bounds);

}  // namespace inferlab
