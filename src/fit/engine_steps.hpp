#pragma once
// One engine profile point as `predict --framework inferlab` sees it: the model, the options and
// precision of the profile's switches, the step's shape and its operator list.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fit/engine_profile.hpp"
#include "hw/hardware_spec.hpp"
#include "model/model_config.hpp"
#include "model/step_graph.hpp"
#include "predict/options.hpp"
#include "predict/step_predictor.hpp"

namespace inferlab {

struct EngineStepSetup {
  ModelConfig model;
  PredictOptions options;  // framework inferlab with the profile's switches
  Precision precision;     // as resolved for the hardware
  KernelPlan plan;
  ShardDims shard;
};

// InputError when the model is unknown or the switches do not run on `hardware`.
EngineStepSetup engine_step_setup(const EngineProfile& profile, const HardwareSpec& hardware);

StepShape engine_point_shape(const EngineProfilePoint& point);
std::vector<Op> engine_point_ops(const EngineStepSetup& setup, const EngineProfilePoint& point);
// The step `predict --framework inferlab` gives for `point` under `setup`, priced by `cost`:
// with cuda_graphs one graph launch per step, else the eager launch queue with `host`'s costs.
StepPrediction predict_engine_step(const EngineStepSetup& setup, const EngineProfilePoint& point,
                                   const CostModel& cost, bool cuda_graphs,
                                   const HostOverhead& host = {});

// The ops of `ops` in one engine kernel class.
std::vector<const Op*> ops_of_class(const std::vector<Op>& ops, const std::string& kernel_class);
// Profile marks the plan predicts for a class (each call of it marked once).
int64_t predicted_marks(const std::vector<const Op*>& ops);

// Setups of many profiles, one per file, made once.
class EngineSetupCache {
 public:
  explicit EngineSetupCache(const HardwareSpec& hardware) : hardware_(hardware) {}
  const EngineStepSetup& of(const EngineProfile& profile);

 private:
  const HardwareSpec& hardware_;
  std::map<std::string, std::unique_ptr<EngineStepSetup>> setups_;
};

}  // namespace inferlab
