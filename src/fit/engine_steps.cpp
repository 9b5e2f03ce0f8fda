#include "fit/engine_steps.hpp"

#include <string>

#include "util/error.hpp"

namespace inferlab {

EngineStepSetup engine_step_setup(const EngineProfile& profile, const HardwareSpec& hardware) {
  EngineStepSetup s;
  s.model = load_model(profile.model);
  s.options = predict_options_for(profile.switches);
  try {
    s.precision = resolve_precision(s.options, hardware);
  } catch (const InputError& e) {
    throw InputError("engine profile '" + profile.path + "': its switches do not run on " +
                     hardware.name + ": " + e.what());
  }
  s.plan = kernel_plan_of(s.options);
  s.shard = shard_dims(s.model, profile.switches.tp);
  return s;
}

StepShape engine_point_shape(const EngineProfilePoint& p) {
  return {p.phase, p.batch, p.phase == Phase::decode ? 1 : p.tokens,
          p.pass_context > 0 ? p.pass_context : p.context};
}

StepPrediction predict_engine_step(const EngineStepSetup& setup, const EngineProfilePoint& point,
                                   const CostModel& cost, bool cuda_graphs,
                                   const HostOverhead& host) {
  StepContext c;
  c.model = &setup.model;
  c.cost = &cost;
  c.precision = setup.precision;
  c.plan = setup.plan;
  c.shard = setup.shard;
  c.framework = Framework::inferlab;
  c.cuda_graphs = cuda_graphs;
  c.host = host;
  return predict_step(c, engine_point_shape(point));
}

std::vector<Op> engine_point_ops(const EngineStepSetup& s, const EngineProfilePoint& p) {
  std::vector<Op> ops;
  build_step_graph(s.model, engine_point_shape(p), s.precision, s.plan, s.shard, ops);
  return ops;
}

std::vector<const Op*> ops_of_class(const std::vector<Op>& ops, const std::string& kernel_class) {
  std::vector<const Op*> out;
  for (const Op& op : ops) {
    if (kernel_class == op.tag.kernel_class) out.push_back(&op);
  }
  return out;
}

int64_t predicted_marks(const std::vector<const Op*>& ops) {
  int64_t marks = 0;
  for (const Op* op : ops) marks += op->count * op->tag.marks;
  return marks;
}

const EngineStepSetup& EngineSetupCache::of(const EngineProfile& profile) {
  auto& slot = setups_[profile.path];
  if (!slot) slot = std::make_unique<EngineStepSetup>(engine_step_setup(profile, hardware_));
  return *slot;
}

}  // namespace inferlab
