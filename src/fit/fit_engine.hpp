#pragma once
// `inferlab fit --engine`: the engine's calibration (data/engine_costs/<hardware>.json) from its
// own profiles, on their fit split only (docs/ENGINE_PREDICTION.md).
#include <string>
#include <vector>

#include "cost/cost_model.hpp"
#include "cost/engine/engine_costs.hpp"
#include "fit/engine_kernel_fit.hpp"
#include "fit/engine_profile.hpp"
#include "hw/hardware_spec.hpp"

namespace inferlab {

struct EngineFit {
  EngineCosts costs;
  // What the fit could not use and where the kernel list disagrees with the profile (a class
  // measured that the plan does not launch, calls counted differently, ...).
  std::vector<std::string> notes;
  int fit_points = 0, held_out_points = 0, class_samples = 0;
};

// Fits in three stages, every one on the fit split only (held-out points are dropped first):
//  1. What a profile mark adds per call: the profiled passes' class times summed, less the
//     measured step, per call (least squares, with a constant per step kind).
//  2. Per (class, path, format): t0 and the two efficiencies (fit_engine_kernel) on the class
//     times less those marks, the ops' work from the kernel list the switches give.
//  3. Whole steps with the kernels priced as fitted: a constant per CUDA-graph step, and the
//     host's time per eager launch (a grid, replaying the launch queue) with a constant per
//     eager step.
// `fallback` prices the ops of classes no profile has measured (today's model). `ceilings`:
// the hardware whose bandwidth and peaks the efficiencies are fractions of. Deterministic.
EngineFit fit_engine_costs(const std::vector<EngineProfile>& profiles, const HardwareSpec& ceilings,
                           const CostModel& fallback, const EngineKernelPrior& prior = {});

// `fit --engine --base FILE`: `base` (a fitted calibration) extended by the (class, path, format)
// keys it lacks, fitted on `profiles`' fit split with base's profile mark and tensor-core clock;
// every key and step constant of base is kept. A new model's profiles then add its own kernels
// (a mixture of experts' router and experts) without moving what the other models were fitted
// on: their eager steps wait on the host differently (a GEMM an expert launched after a read of
// the counts), which would move the host's time per launch for every model. The extension is
// listed in fit_summary["extensions"]. InputError when the profiles add no key.
EngineFit extend_engine_costs(const EngineCosts& base, const std::vector<EngineProfile>& profiles,
                              const HardwareSpec& ceilings, const CostModel& fallback,
                              const EngineKernelPrior& prior = {});

}  // namespace inferlab
