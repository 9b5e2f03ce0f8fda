#pragma once
// a / b rounded to nearest from a precomputed reciprocal, for quantizing many values by one scale:
// the streaming GEMV quantizes its input row (fp8 E4M3 codes, W8A8 int8 codes) in every block, and
// a correctly rounded division cost about nine instructions a value where this costs three.
//
// Markstein's correction: with r = RN(1 / b), q0 = RN(a · r) is within an ulp of a / b, the
// remainder a − b · q0 is exact in one fused multiply-add, and RN(q0 + rem · r) is RN(a / b) as
// long as that remainder does not underflow. With b in quotient_rn_takes' range that holds for
// every quotient of at least 2^-24; smaller ones may differ in their last bit, and both
// quantizers round every such quotient to zero (E4M3's smallest step is 2^-9, int8's 1).
// tests/engine/quotient_rn_test.cpp checks quotients and codes against the division's for bf16
// inputs, and MEASUREMENTS §55 has its exhaustive run over every pair of bf16 values.
// C++17: the CUDA sources include it.
#include <cmath>

#if defined(__CUDACC__)
#define INFERLAB_QUOTIENT_HD __host__ __device__
#else
#define INFERLAB_QUOTIENT_HD
#endif

namespace inferlab::engine {

// Whether quotient_rn may stand in for a quantizer's a / b: 1 / b is normal, and a remainder of
// a quotient of 2^-24 or more (|a| ≥ 2^-84) stays normal.
INFERLAB_QUOTIENT_HD inline bool quotient_rn_takes(float b) {
  return b >= 0x1p-60f && b <= 0x1p100f;
}

// a / b from r = RN(1 / b) (1.0f / b), where quotient_rn_takes(b) and |a / b| ≤ 2^100: RN(a / b)
// bit for bit when |a / b| ≥ 2^-24, within an ulp below that.
INFERLAB_QUOTIENT_HD inline float quotient_rn(float a, float b, float r) {
#if defined(__CUDA_ARCH__)
  const float q0 = __fmul_rn(a, r);
  const float rem = __fmaf_rn(-q0, b, a);
  return __fmaf_rn(rem, r, q0);
#else
  const float q0 = a * r;
  const float rem = std::fma(-q0, b, a);
  return std::fma(rem, r, q0);
#endif
}

}  // namespace inferlab::engine

#undef INFERLAB_QUOTIENT_HD
