// quotient_rn (engine/quant/quotient_rn.hpp) against the division it replaces in the streaming
// GEMV's input quantization: for a row maximum `top` (a bf16 value) the scale is top / 448 (E4M3)
// or top / 127 (int8), and every bf16 value v with |v| ≤ top is quantized as v / scale. The
// quotient must be the division's bit for bit from 2^-24 up (below, where every code is zero, its
// remainder may underflow), and the E4M3 and int8 codes must be the reference quantizers'
// everywhere. The CI run takes every 61st top with every v
// below it; INFERLAB_QUOTIENT_EXHAUSTIVE=1 takes every top (~5 × 10^8 pairs a scale, ~1 minute).
#include "engine/quant/quotient_rn.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/bf16.hpp"
#include "engine/quant/quantize.hpp"

namespace inferlab::engine {
namespace {

float bits_to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint32_t float_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

int int8_code(float q) {
  return static_cast<int>(std::fmax(-127.0f, std::fmin(127.0f, std::nearbyint(q))));
}

struct Mismatches {
  int64_t pairs = 0, quotients = 0, e4m3 = 0, int8 = 0;
};

// Every positive bf16 v ≤ top against scale top / code_max. Negative v are symmetric in both
// computations (a review's run of every negative v found none differ); −0 is not: quotient_rn
// gives +0 (HandWorked).
void check_top(float top, float code_max, Mismatches* m) {
  const float scale = top / code_max;
  if (!quotient_rn_takes(scale)) return;  // the kernels divide there
  const float r = 1.0f / scale;
  for (uint32_t v_bits = 1; v_bits < 0x7f80u; ++v_bits) {
    const float v = bits_to_float(v_bits << 16);
    if (v > top) break;
    const float want = v / scale, got = quotient_rn(v, scale, r);
    ++m->pairs;
    if (std::fabs(want) >= 0x1p-24f && float_bits(want) != float_bits(got)) ++m->quotients;
    if (float_to_e4m3(want) != float_to_e4m3(got)) ++m->e4m3;
    if (int8_code(want) != int8_code(got)) ++m->int8;
  }
}

bool exhaustive() {
  const char* value = std::getenv("INFERLAB_QUOTIENT_EXHAUSTIVE");
  return value != nullptr && std::string(value) == "1";
}

TEST(QuotientRn, HandWorked) {
  const float b = 3.0f, r = 1.0f / b;
  EXPECT_EQ(quotient_rn(1.0f, b, r), 1.0f / 3.0f);
  EXPECT_EQ(quotient_rn(-6.0f, b, r), -2.0f);
  EXPECT_EQ(quotient_rn(0.0f, b, r), 0.0f);
  // 448 / (448 / 448): the largest E4M3 code exactly.
  EXPECT_EQ(quotient_rn(448.0f, 1.0f, 1.0f), 448.0f);
  EXPECT_TRUE(quotient_rn_takes(1.0f));
  EXPECT_FALSE(quotient_rn_takes(0x1p-61f));
  EXPECT_FALSE(quotient_rn_takes(0x1p110f));
  EXPECT_FALSE(quotient_rn_takes(0.0f));
  // −0: the remainder is +0, so the quotient is +0 where the division gives −0 (E4M3 code 0x00
  // for 0x80). The streaming GEMV's products of it are +0 either way.
  EXPECT_EQ(quotient_rn(-0.0f, b, r), 0.0f);
  EXPECT_FALSE(std::signbit(quotient_rn(-0.0f, b, r)));
}

// A product RN(v · r) alone differs from the division: the correction is what makes it exact.
TEST(QuotientRn, TheProductAloneWouldDiffer) {
  int64_t differ = 0;
  for (uint32_t top_bits = 0x3f80u; top_bits < 0x4080u; ++top_bits) {  // tops in [1, 4)
    const float top = bits_to_float(top_bits << 16), scale = top / 448.0f, r = 1.0f / scale;
    for (uint32_t v_bits = 0x3c00u; v_bits < 0x3f80u; ++v_bits) {
      const float v = bits_to_float(v_bits << 16);
      differ += float_bits(v * r) != float_bits(v / scale) ? 1 : 0;
    }
  }
  EXPECT_GT(differ, 0);
}

TEST(QuotientRn, QuantizedCodesEqualTheDivisions) {
  const uint32_t stride = exhaustive() ? 1 : 61;
  for (const float code_max : {448.0f, 127.0f}) {
    Mismatches m;
    std::vector<uint32_t> tops;
    for (uint32_t bits = 0x0080u; bits < 0x7f80u; bits += stride) tops.push_back(bits);
    // 1, 448, and the tops at either end of quotient_rn_takes' range for each scale (where a
    // remainder comes closest to underflow), once each.
    for (uint32_t bits : {0x3f80u, 0x43e0u, 0x25e0u, 0x75e0u, 0x24feu, 0x74feu}) {
      tops.push_back(bits);
    }
    std::sort(tops.begin(), tops.end());
    tops.erase(std::unique(tops.begin(), tops.end()), tops.end());
    for (uint32_t top_bits : tops) check_top(bits_to_float(top_bits << 16), code_max, &m);
    EXPECT_GT(m.pairs, exhaustive() ? int64_t{400'000'000} : int64_t{5'000'000}) << code_max;
    EXPECT_EQ(m.quotients, 0) << code_max;
    EXPECT_EQ(m.e4m3, 0) << code_max;
    EXPECT_EQ(m.int8, 0) << code_max;
    std::printf("code_max %.0f: %lld pairs, %lld quotient / %lld E4M3 / %lld int8 mismatches\n",
                code_max, static_cast<long long>(m.pairs), static_cast<long long>(m.quotients),
                static_cast<long long>(m.e4m3), static_cast<long long>(m.int8));
  }
}

}  // namespace
}  // namespace inferlab::engine
