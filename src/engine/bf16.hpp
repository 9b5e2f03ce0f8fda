#pragma once
#include <cstdint>
#include <cstring>

namespace inferlab::engine {

// bf16 is the top half of an IEEE fp32.
inline float bf16_to_float(uint16_t bits) {
  uint32_t word = uint32_t{bits} << 16;
  float value;
  std::memcpy(&value, &word, sizeof value);
  return value;
}

// Round to nearest even, as PyTorch does; NaN stays a (quiet) NaN.
inline uint16_t float_to_bf16(float value) {
  uint32_t word;
  std::memcpy(&word, &value, sizeof word);
  if ((word & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((word >> 16) | 0x0040u);
  uint32_t rounding = 0x7fffu + ((word >> 16) & 1u);
  return static_cast<uint16_t>((word + rounding) >> 16);
}

// IEEE binary16 to fp32 (subnormals, infinities and NaN included).
inline float fp16_to_float(uint16_t bits) {
  uint32_t sign = uint32_t{bits & 0x8000u} << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t word;
  if (exponent == 0x1f) {
    word = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    word = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    word = sign;
  } else {  // subnormal: normalize
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    word = sign | (static_cast<uint32_t>(113 - shift) << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float value;
  std::memcpy(&value, &word, sizeof value);
  return value;
}

}  // namespace inferlab::engine
