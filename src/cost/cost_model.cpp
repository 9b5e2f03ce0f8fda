#include "cost/cost_model.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace inferlab {

namespace {
constexpr std::array<std::string_view, kOpClassCount> kClassNames = {
    "gemm", "gemv", "attention", "norm", "elementwise", "softmax", "communication"};
}

std::string_view op_class_name(OpClass cls) {
  return kClassNames[static_cast<int>(cls)];
}

OpClass parse_op_class(std::string_view name) {
  for (int i = 0; i < kOpClassCount; ++i) {
    if (kClassNames[i] == name) return static_cast<OpClass>(i);
  }
  std::vector<std::string> known(kClassNames.begin(), kClassNames.end());
  throw InputError("unknown operator class '" + std::string(name) +
                   "'; known: " + join_names(known));
}

std::string_view bound_name(Bound bound) {
  switch (bound) {
    case Bound::compute:
      return "compute";
    case Bound::memory:
      return "memory";
    case Bound::latency:
      return "latency";
    case Bound::communication:
      return "communication";
  }
  return "?";
}

OpClass classify_op(const Op& op, int64_t gemv_max_rows) {
  switch (op.kind) {
    case OpKind::gemm:
    case OpKind::moe_gemm:
      return op.gemm.m <= gemv_max_rows ? OpClass::gemv : OpClass::gemm;
    case OpKind::attention:
    case OpKind::attention_scores:
    case OpKind::attention_context:
      return OpClass::attention;
    case OpKind::rmsnorm:
    case OpKind::add_rmsnorm:
    case OpKind::layernorm:
    case OpKind::add_layernorm:
      return OpClass::norm;
    case OpKind::attention_softmax:
    case OpKind::sampling:
      return OpClass::softmax;
    case OpKind::all_reduce:
    case OpKind::all_gather:
      return OpClass::communication;
    default:
      return OpClass::elementwise;
  }
}

void OpCost::combine_parts() {
  const double work_s =
      std::max(compute_s, memory_s) + serial_fraction * std::min(compute_s, memory_s);
  time_s = work_s + latency_s;
  if (latency_s > work_s) {
    bound = Bound::latency;
  } else {
    bound = compute_s >= memory_s ? Bound::compute : Bound::memory;
  }
}

}  // namespace inferlab
