#include "util/dtype.hpp"

#include <vector>

#include "util/error.hpp"

namespace inferlab {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::fp32:
      return "fp32";
    case DType::tf32:
      return "tf32";
    case DType::fp16:
      return "fp16";
    case DType::bf16:
      return "bf16";
    case DType::fp8:
      return "fp8";
    case DType::int8:
      return "int8";
    case DType::int4:
      return "int4";
    case DType::fp4:
      return "fp4";
  }
  return "?";
}

double dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::fp32:
    case DType::tf32:
      return 4.0;
    case DType::fp16:
    case DType::bf16:
      return 2.0;
    case DType::fp8:
    case DType::int8:
      return 1.0;
    case DType::int4:
    case DType::fp4:
      return 0.5;
  }
  return 0.0;
}

DType parse_dtype(std::string_view name) {
  std::vector<std::string> known;
  for (DType d : kAllDTypes) {
    if (dtype_name(d) == name) return d;
    known.emplace_back(dtype_name(d));
  }
  if (name == "float16" || name == "half") return DType::fp16;
  if (name == "bfloat16") return DType::bf16;
  if (name == "float32" || name == "float") return DType::fp32;
  throw InputError("unknown dtype '" + std::string(name) + "'; known: " + join_names(known));
}

bool is_8bit_or_less(DType dtype) {
  return dtype_bytes(dtype) <= 1.0;
}

}  // namespace inferlab
