#pragma once
#include <array>
#include <string>
#include <string_view>

namespace inferlab {

// Numeric formats of weights, activations, KV cache and the math units that consume them.
enum class DType { fp32, tf32, fp16, bf16, fp8, int8, int4, fp4 };
inline constexpr int kDTypeCount = 8;
inline constexpr std::array<DType, kDTypeCount> kAllDTypes = {DType::fp32, DType::tf32, DType::fp16,
                                                              DType::bf16, DType::fp8,  DType::int8,
                                                              DType::int4, DType::fp4};

std::string_view dtype_name(DType dtype);
// Storage size of one element; int4/fp4 pack two per byte.
double dtype_bytes(DType dtype);
// Throws InputError listing the known names.
DType parse_dtype(std::string_view name);
bool is_8bit_or_less(DType dtype);

}  // namespace inferlab
