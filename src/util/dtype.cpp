#include "util/dtype.hpp"

#include "util/enum_names.hpp"

namespace inferlab {

namespace {
// In kAllDTypes order.
constexpr EnumNameTable<DType, kDTypeCount> kDTypeNames = {{
    {DType::fp32, "fp32"},
    {DType::tf32, "tf32"},
    {DType::fp16, "fp16"},
    {DType::bf16, "bf16"},
    {DType::fp8, "fp8"},
    {DType::int8, "int8"},
    {DType::int4, "int4"},
    {DType::fp4, "fp4"},
}};
}  // namespace

std::string_view dtype_name(DType dtype) {
  return enum_name(kDTypeNames, dtype);
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
  // PyTorch's spellings are accepted too; the error lists the table's names only.
  if (name == "float16" || name == "half") return DType::fp16;
  if (name == "bfloat16") return DType::bf16;
  if (name == "float32" || name == "float") return DType::fp32;
  return parse_enum(kDTypeNames, name, "dtype");
}

bool is_8bit_or_less(DType dtype) {
  return dtype_bytes(dtype) <= 1.0;
}

}  // namespace inferlab
