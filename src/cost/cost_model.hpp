#pragma once
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
  Bound bound = Bound::memory;
  OpClass op_class = OpClass::elementwise;
  double efficiency() const { return time_s > 0.0 ? ideal_s / time_s : 0.0; }
  // time = max(compute, memory) + latency; bound = the largest of the three parts.
  void combine_parts();
};

// Prices operators on one device. Implementations: roofline (spec sheet + delay factors);
// calibrated and tilesim come later behind the same interface.
class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual OpCost price(const Op& op) const = 0;
  virtual std::string name() const = 0;
  // How much slower compute-bound kernels run when the GPU computes without pause than when
  // each runs alone (a power-capped GPU lowers its clock under sustained tensor-core load).
  // Steps apply it in proportion to the share of their time that is compute bound.
  virtual double sustained_compute_slowdown() const { return 1.0; }
};

}  // namespace inferlab
