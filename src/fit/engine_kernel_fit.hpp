#pragma once
// The fit of one engine (class, path, format): (t0, e_compute, e_memory[, e_cta][, t_cta or
// t_trip][, t_input]) of
//   class time = sum over its kernels of
//                t0 + waves t_cta + trips t_trip + KiB t_input
//                + max(c + s min(FLOPs / (peak e_compute), bytes / (BW e_memory)), cta_s / e_cta)
// with c the larger of the two and s the serial fraction (fitted for cuBLASLt GEMMs only)
// from measured class times (cta_s: engine_cta_stream_s, for ops that give their grid). Pure
// arithmetic, deterministic (a grid, then a compass search).
#include <string>
#include <vector>

#include "cost/engine/engine_costs.hpp"

namespace inferlab {

// One op of a class at one profile point, its work already over the ceilings: `launches`
// kernels in all, `compute_s` = FLOPs / peak and `memory_s` = bytes / bandwidth in all (each
// op instance takes the max of the two over the efficiencies; all instances are alike).
struct EngineWorkTerm {
  double launches = 0.0;
  double compute_s = 0.0;
  double memory_s = 0.0;
  double cta_s = 0.0;  // the per-CTA streaming term at efficiency 1 (0: the op gives no grid)
  // Waves of CTAs with a fixed cost each (engine_cta_waves: ops whose grid is given without a
  // streaming share, the tiled prefill attention); each adds cta_fixed_s.
  double cta_waves = 0.0;
  // The flash decode combine's trips past the first (engine_combine_extra_trips), in all; each
  // adds combine_trip_s.
  double combine_trips = 0.0;
  // The KiB of input the streaming GEMV's CTAs stage (engine_staged_input_kib), in all; each
  // adds input_kib_s.
  double staged_input_kib = 0.0;
};

// One (point, class): the class's in-stream time and the work terms of its ops.
struct EngineKernelSample {
  double target_s = 0.0;
  std::vector<EngineWorkTerm> terms;
};

// Where parameters the data do not pin down go (a weak pull, `weight` x squared log-distance,
// t0 in units of `t0_scale_s`): with few or one-regime points (all compute bound, or one shape)
// the unidentified directions land on these.
// The t0 scale is wide: time the data cannot place is more likely a kernel's fixed latency (few
// CTAs, a short stream) than a bandwidth far below the others'.
struct EngineKernelPrior {
  double t0_s = 3e-6;
  double compute_efficiency = 0.6;
  double memory_efficiency = 0.9;
  double t0_scale_s = 20e-6;
  double weight = 1e-3;
  // A further combine trip's cost where it was measured apart from the profiles (`fit --engine
  // --combine-trip-us`): kept, not fitted; negative: fitted where the samples' trips vary. The
  // profiles' contexts (256, 1024, 4096) change the trips only with the context, so a fitted
  // trip also takes up what else grows with it.
  double combine_trip_s = -1.0;
};

// Which ceilings a key's kernels can be bound by, and so which efficiencies are fitted (the
// other stays at the prior): GEMV kernels, decode attention and every kernel off the matrix
// units stream memory; prefill attention computes (its bytes grow with the context, its FLOPs
// with its square, and only the FLOPs describe it); cuBLASLt GEMMs and naive attention do
// either, by shape.
enum class EngineBound { memory, compute, either };
EngineBound engine_bound_of_path(const std::string& path);

double engine_sample_time_s(const EngineKernelSample& sample, const EngineKernelParams& params);

// Minimises sum over samples of (predicted / target - 1)^2 plus the prior's pull; t0 in
// [0, 1 ms], efficiencies in [0.01, 4]; e_cta only where some term has a cta_s (else 0, no
// term); t_cta where some term has CTA waves, else t_trip where the samples' combine trips per
// launch differ, else t_input (input_kib_s) where their staged KiB per launch take three values
// or more (no kernel has two; each else 0), each pulled weakly to 0. points and mape (of the
// in-stream targets) are set.
// Samples with a non-positive target are ignored; none left: the prior, points 0.
// With fit_serial the serial fraction (EngineKernelParams::serial_fraction, in [0, 1]) is
// fitted too; else it is 0.
EngineKernelParams fit_engine_kernel(const std::vector<EngineKernelSample>& samples,
                                     const EngineKernelPrior& prior = {},
                                     EngineBound bound = EngineBound::either,
                                     bool fit_serial = false);
// The paths whose kernels get a serial fraction: cuBLASLt's GEMMs.
bool engine_serial_path(const std::string& path);

}  // namespace inferlab
