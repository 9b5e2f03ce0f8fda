#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cost/cost_model.hpp"
#include "cost/engine/engine_costs.hpp"
#include "hw/collective_curve.hpp"

namespace inferlab {

// Prices the inferlab engine's kernels from its own calibration (EngineCosts): an op tagged with
// an engine class (model/engine_blocks.hpp) takes, per kernel launch,
//   t0 + max(FLOPs / (peak[dtype] x e_compute), bytes / (bandwidth x e_memory))
// with (t0, e_compute, e_memory) those of its (class, path, format). A key the calibration has
// not fitted falls back, in order, to the same class and path in bf16, and for a fused GEMV to
// the plain GEMV of its format, then bf16 (engine_params_for says which); ops with no engine
// class, or whose class has no fitted key at all, are priced by `fallback` (today's model).
// Prices are in-stream; an op timed alone (isolated_time_s) is what the engine's profile
// reports for it: the in-stream time plus what its profile mark adds.
class EngineCostModel : public CostModel {
 public:
  // collectives: the GPU's measured in-stream curves (hw/collective_curve.hpp), which price the
  // engine's all-reduces and all-gathers where they hold the op's library and device count.
  EngineCostModel(EngineCosts costs, std::unique_ptr<CostModel> fallback,
                  InStreamCollectives collectives = {});
  OpCost price(const Op& op) const override;
  double isolated_time_s(const Op& op) const override;
  std::string name() const override { return "engine"; }
  std::optional<FittedStepCosts> fitted_step_costs() const override;
  nlohmann::json describe(const Op& op) const override;

  const EngineCosts& costs() const { return costs_; }
  const CostModel& fallback() const { return *fallback_; }
  // The keys of `ops` not fitted as such, each with what prices it ("... by bf16's", "... by
  // the fallback model"), without repeats, in order of first appearance.
  std::vector<std::string> unfitted_keys(const std::vector<Op>& ops) const;

 private:
  const EngineKernelParams* params_for(const KernelTag& tag, std::string* used_key) const;

  // The curve that prices a collective op as the engine runs it inside a decode graph (the one-
  // shot kernel's or NCCL's, by the op's tag), or null.
  const CollectiveCurve* in_graph_curve(const Op& op) const;
  // The same collective's curve launched eagerly, or null.
  const CollectiveCurve* eager_curve(const Op& op) const;

  EngineCosts costs_;
  std::unique_ptr<CostModel> fallback_;
  InStreamCollectives collectives_;
};

// The peak FLOP/s an op's FLOPs are priced against: the matrix peak of its compute dtype for
// GEMMs and attention, the fp32 SIMT rate for everything else, for the experts' CUDA-core
// kernels and, where the ceilings say so (EngineCeilings::stream_gemv_simt), for the streaming
// GEMV, whose multiply-adds run on the CUDA cores.
double engine_op_peak(const Op& op, const EngineCeilings& ceilings);
// The streaming GEMV's paths (1-2 rows): "gemv", "gemv_fused" and "gemv_fused_rope" (not the
// tensor-core GEMV's "gemv_mma" ones).
bool engine_stream_gemv_path(std::string_view path);
// A mixture of experts' slot and grouped kernels ("moe_gemv", "moe_grouped"): CUDA-core
// multiply-adds, priced against the fp32 rate like the streaming GEMV.
bool engine_moe_cuda_core_path(std::string_view path);

// The flash decode's split-K combine trips past the first (model/engine_decode_plan.hpp), as the
// engine plans the op's shape on `ceilings.sm_count` SMs; 0 for other ops, one group of splits,
// or no SM count.
int64_t engine_combine_extra_trips(const Op& op, const EngineCeilings& ceilings);

// Whether the engine runs `op` on the tensor cores (cuBLASLt GEMMs, the experts' GEMMs, the tiled
// prefill attention): the kernels whose clock EngineCosts::matrix_clock_gain describes when their
// compute term binds.
bool engine_tensor_core_op(const Op& op);
bool engine_tensor_core_path(std::string_view path);  // the same, by the key's path
// The multiplier of those kernels' compute term in a step that keeps the tensor cores busy for
// `duty` (0-1) of its GPU time.
double engine_clock_factor(double gain, double duty);

// The per-CTA streaming term of `op` at cta_efficiency 1: its CTAs' bytes in order, one CTA per
// SM at a time, each at one SM's share of the bandwidth (bytes_per_cta x max(SMs, CTAs) /
// bandwidth); 0 when the op gives no grid or the ceilings no SM count.
double engine_cta_stream_s(const Op& op, const EngineCeilings& ceilings);
// Waves of CTAs with a fixed cost each: CTAs / SMs for an op whose grid is given without a
// streaming share (bytes_per_cta 0; the tiled prefill attention); 0 otherwise or without an SM
// count.
double engine_cta_waves(const Op& op, const EngineCeilings& ceilings);

// KiB of input rows each CTA of the streaming GEMV stages before its first multiply-add, per
// launch: m rows of k bf16 inputs (the fused RMSNorm reads the same); 0 for other paths.
double engine_staged_input_kib(const Op& op);

// The time of one op under (t0, efficiencies) against `ceilings`; the fit uses it too.
OpCost engine_op_cost(const Op& op, const EngineKernelParams& params,
                      const EngineCeilings& ceilings);

// The keys tried for a tag, most specific first.
std::vector<std::string> engine_key_candidates(const KernelTag& tag);

}  // namespace inferlab
