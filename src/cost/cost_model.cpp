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

void OpCost::combine_parts() {
  double work_s = std::max(compute_s, memory_s);
  time_s = work_s + latency_s;
  if (latency_s > work_s) {
    bound = Bound::latency;
  } else {
    bound = compute_s >= memory_s ? Bound::compute : Bound::memory;
  }
}

}  // namespace inferlab
