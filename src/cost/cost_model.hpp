#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "model/op.hpp"

namespace inferlab {

// Query rows per sequence at or below which attention is decode (KV streaming), and the
// query rows a FlashAttention prefill CTA takes: shared by every cost model.
inline constexpr int64_t kAttentionDecodeMaxQueryRows = 16;
inline constexpr double kFlashPrefillQueryTile = 128.0;
// Token rows at or below which a GEMM runs as a matrix-vector (GEMV) kernel.
inline constexpr int64_t kGemvMaxRows = 16;

// Efficiency classes: each has its own delay factor (measured time over ideal roofline time).
enum class OpClass { gemm, gemv, attention, norm, elementwise, softmax, communication };
inline constexpr int kOpClassCount = 7;
std::string_view op_class_name(OpClass cls);
// The class of an op; GEMMs of at most `gemv_max_rows` rows are GEMVs.
OpClass classify_op(const Op& op, int64_t gemv_max_rows = kGemvMaxRows);
OpClass parse_op_class(std::string_view name);  // throws InputError listing the classes

enum class Bound { compute, memory, latency, communication };
std::string_view bound_name(Bound bound);

// Time of one instance of an op on one device, and why.
struct OpCost {
  double time_s = 0.0;
  double compute_s = 0.0;  // FLOPs over attainable compute (tiling and delay factor included)
  double memory_s = 0.0;   // bytes over attainable bandwidth (delay factor included)
  double latency_s = 0.0;  // fixed per-kernel cost
  double ideal_s = 0.0;    // max(FLOPs / peak, bytes / peak bandwidth): the roofline floor
  // The share of the smaller of compute_s and memory_s that does not hide under the larger (0:
  // the roofline's max; 1: they add). The engine's calibration fits it for cuBLASLt GEMMs.
  double serial_fraction = 0.0;
  Bound bound = Bound::memory;
  OpClass op_class = OpClass::elementwise;
  double efficiency() const { return time_s > 0.0 ? ideal_s / time_s : 0.0; }
  // time = max(compute, memory) + serial_fraction min(compute, memory) + latency; bound = the
  // largest of the three parts.
  void combine_parts();
};

// Constants of whole steps that a model fitted on steps brings along (the inferlab engine's
// calibration): the host's time per eager kernel launch and a constant per eager step; under a
// CUDA graph, what each kernel saves or costs against an eager stream, and a constant per step.
struct FittedStepCosts {
  double host_per_kernel_s = 0.0;
  double eager_step_s = 0.0;
  double graph_per_kernel_s = 0.0;
  double graph_step_s = 0.0;
  // EngineCosts::graph_programmatic_per_kernel_s: what a programmatically launched kernel saves
  // more in a graph.
  double graph_programmatic_per_kernel_s = 0.0;
  // EngineCosts::matrix_clock_gain: compute-bound tensor-core kernels run faster by this much
  // times the share of the step the tensor cores are idle.
  double matrix_clock_gain = 0.0;
  // EngineCosts::decode_cta_bps: the bytes per second one CTA of the flash-decode kernel
  // streams alone (the longest sequence's CTAs of a batch of unequal contexts), and the SMs the
  // kernel plans its splits for; 0: not priced.
  double decode_cta_bps = 0.0;
  int64_t sm_count = 0;
  // EngineCosts::sync_pass_s: what a pass the host waits for adds to its device time; 0: none.
  double sync_pass_s = 0.0;
  // EngineCosts::model_switch_per_layer_s: what a model's first pass after another model's costs
  // more, a layer; 0: none.
  double model_switch_per_layer_s = 0.0;
};

// Prices operators on one device. Implementations: roofline (spec sheet + delay factors),
// calibrated (cost/calibrated/) and tilesim (cost/tilesim/); callers see only this interface.
class CostModel {
 public:
  virtual ~CostModel() = default;
  // In-stream time: what one instance adds to a step run back to back in a stream or a CUDA
  // graph (the gap between kernels included). Steps add these up.
  virtual OpCost price(const Op& op) const = 0;
  // Isolated time: one call timed alone with CUDA events right after an L2 flush, which is
  // what torch.utils.benchmark, Triton's do_bench and `validate` measure. It adds to the
  // in-stream time what timing one call alone costs. The rule per model: calibrated and
  // tilesim model the event overhead, the launch wait of an op's further kernels and the
  // write-back of the dirty lines the flush left; the roofline replaces its first kernel's
  // in-stream latency by the single-op floor its delay factors were fitted with (the fastest
  // op timed alone) and, with factors that carry no floor, answers the in-stream time.
  virtual double isolated_time_s(const Op& op) const = 0;
  // How the model runs `op`, for reports: calibrated gives a GEMM's cuBLAS tiling, tilesim
  // the mapping its search chose; null when the model has nothing to say (the roofline).
  virtual nlohmann::json describe(const Op& /*op*/) const { return nullptr; }
  virtual std::string name() const = 0;
  // How much slower compute-bound kernels run when the GPU computes without pause than when
  // each runs alone (a power-capped GPU lowers its clock under sustained tensor-core load).
  // Steps apply it in proportion to the share of their time that is compute bound.
  virtual double sustained_compute_slowdown() const { return 1.0; }
  // Empty unless the model was fitted on whole steps of one framework (the engine's costs):
  // predict_step then uses these in place of the host-overhead file's constants.
  virtual std::optional<FittedStepCosts> fitted_step_costs() const { return std::nullopt; }
};

}  // namespace inferlab
