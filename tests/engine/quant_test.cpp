// The quantization arithmetic (engine/quant/): hand-worked E4M3, fp16, int8, int4 and fp8
// values, SmoothQuant's factors, and the CPU reference of quantized models.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "engine/bf16.hpp"
#include "engine/cpu/cpu_backend.hpp"
#include "engine/init_weights.hpp"
#include "engine/quant/formats.hpp"
#include "engine/quant/quantize.hpp"
#include "engine/quant/quantized_model.hpp"
#include "engine/quant/smoothquant.hpp"
#include "engine_test_support.hpp"

namespace inferlab::engine {
namespace {

TEST(Quantize, E4m3HandWorked) {
  EXPECT_EQ(float_to_e4m3(1.0f), 0x38);   // exponent 7 (bias 7), mantissa 0
  EXPECT_EQ(float_to_e4m3(-2.0f), 0xc0);  // sign, exponent 8
  EXPECT_EQ(float_to_e4m3(448.0f), 0x7e);
  EXPECT_EQ(float_to_e4m3(500.0f), 0x7e);  // saturates
  EXPECT_EQ(float_to_e4m3(-INFINITY), 0xfe);
  EXPECT_EQ(float_to_e4m3(240.0f), 0x77);                 // 1.875 · 2^7
  EXPECT_EQ(float_to_e4m3(0.015625f), 0x08);              // 2^-6, the smallest normal
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -9)), 0x01);   // the smallest subnormal
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -10)), 0x00);  // a tie, to even (0)
  EXPECT_EQ(float_to_e4m3(std::ldexp(3.0f, -10)), 0x02);  // 1.5 quanta: a tie, to 2
  EXPECT_EQ(float_to_e4m3(1.0625f), 0x38);                // halfway between 1 and 1.125: to even
  EXPECT_EQ(float_to_e4m3(1.1875f), 0x3a);                // halfway between 1.125 and 1.25: to even
  EXPECT_EQ(float_to_e4m3(NAN), 0x7f);
  EXPECT_FLOAT_EQ(e4m3_to_float(0x7e), 448.0f);
  EXPECT_FLOAT_EQ(e4m3_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_FLOAT_EQ(e4m3_to_float(0xb0), -0.5f);
  EXPECT_TRUE(std::isnan(e4m3_to_float(0xff)));
  for (int code = 0; code < 256; ++code) {  // every finite code survives a round trip
    if ((code & 0x7f) == 0x7f) continue;
    EXPECT_EQ(float_to_e4m3(e4m3_to_float(static_cast<uint8_t>(code))), code) << code;
  }
}

TEST(Quantize, Fp16HandWorked) {
  EXPECT_EQ(float_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7c00);                      // rounds past the largest: inf
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -24)), 0x0001);         // smallest subnormal
  EXPECT_EQ(float_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // half an ulp: to even
  EXPECT_EQ(float_to_fp16(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // 1.5 ulp: to even
  EXPECT_EQ(float_to_fp16(-0.2f), 0xb266);
  for (uint32_t code = 0; code < 65536; ++code) {
    if ((code & 0x7c00) == 0x7c00 && (code & 0x3ff) != 0) continue;  // NaN
    EXPECT_EQ(float_to_fp16(fp16_to_float(static_cast<uint16_t>(code))), code) << code;
  }
}

// Row [1, -2, 0.5, 4]: absmax 4, scale fp16(4/127) = 0.03125 · (1 + 8/1024) = 0.031494140625;
// q = rne(w / scale) = 31.75 → 32, −63.50 → −64, 15.88 → 16, 127.01 → 127.
TEST(Quantize, Int8MatrixHandWorked) {
  const float w[] = {1.0f, -2.0f, 0.5f, 4.0f};
  const auto m = quantize_matrix(w, 1, 4, DType::int8);
  ASSERT_EQ(m.scales.size(), 1u);
  EXPECT_FLOAT_EQ(m.scales[0], 0.031494140625f);
  const std::vector<int8_t> want = {32, -64, 16, 127};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(static_cast<int8_t>(m.data[i]), want[i]) << i;
  const auto back = dequantize_matrix(m);
  EXPECT_FLOAT_EQ(back[0], 32 * 0.031494140625f);
  EXPECT_EQ(m.device_bytes(), 4 + 4);
}

// A group of 4: [0.7, −1.5, 0.1, 0], absmax 1.5, scale fp16(0.2) = 0.199951171875, zero 8;
// q = rne(w / s) + 8 = 12, 0 (−7.5 → −8), 9, 8; packed low nibble first: 0x0c, 0x89.
TEST(Quantize, Int4GroupHandWorked) {
  const float w[] = {0.7f, -1.5f, 0.1f, 0.0f, 2.0f, 2.0f, 2.0f, 2.0f};
  const auto m = quantize_matrix(w, 1, 8, DType::int4, 4);
  ASSERT_EQ(m.groups(), 2);
  EXPECT_FLOAT_EQ(m.scales[0], 0.199951171875f);
  EXPECT_EQ(m.zeros[0], 8);
  EXPECT_EQ(m.data[0], 0x0c);
  EXPECT_EQ(m.data[1], 0x89);
  // The second group: 2 / fp16(4/15) = 7.5 → 8 → 16, clamped to 15 (GPTQ's grid).
  EXPECT_EQ(m.data[2], 0xff);
  const auto back = dequantize_matrix(m);
  EXPECT_FLOAT_EQ(back[0], 4 * 0.199951171875f);
  EXPECT_FLOAT_EQ(back[1], -8 * 0.199951171875f);
  EXPECT_FLOAT_EQ(back[3], 0.0f);
  EXPECT_EQ(m.device_bytes(), 4 + 2 * 2 + 2);  // nibbles, fp16 scales, zeros
}

// Row [896, −1, 0]: absmax 896, scale 2: 448 → 0x7e, −0.5 → 0xb0, 0 → 0.
TEST(Quantize, Fp8MatrixHandWorked) {
  const float w[] = {896.0f, -1.0f, 0.0f};
  const auto m = quantize_matrix(w, 1, 3, DType::fp8);
  EXPECT_FLOAT_EQ(m.scales[0], 2.0f);
  EXPECT_EQ(m.data[0], 0x7e);
  EXPECT_EQ(m.data[1], 0xb0);
  EXPECT_EQ(m.data[2], 0x00);
}

TEST(Quantize, RowsAndStacking) {
  const float x[] = {0.5f, -1.27f};
  int8_t q[2];
  const float scale = quantize_row_int8(x, 2, q);
  EXPECT_FLOAT_EQ(scale, 1.27f / 127.0f);
  EXPECT_EQ(q[0], 50);
  EXPECT_EQ(q[1], -127);
  float zeros[3] = {0, 0, 0};
  uint8_t e[3];
  EXPECT_EQ(quantize_row_e4m3(zeros, 3, e), 1.0f);  // an all-zero row gets scale 1
  float row[] = {3.0f, 0.1f};
  fake_quantize_row(row, 2, DType::int8);
  EXPECT_FLOAT_EQ(row[0], 3.0f);
  EXPECT_NEAR(row[1], 0.1f, 3.0f / 127 / 2);

  const float a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
  const auto qa = quantize_matrix(a, 1, 4, DType::int8), qb = quantize_matrix(b, 1, 4, DType::int8);
  const auto both = stack_rows({&qa, &qb});
  EXPECT_EQ(both.out, 2);
  EXPECT_EQ(both.scales[1], qb.scales[0]);
  EXPECT_EQ(both.data[4], qb.data[0]);
}

TEST(Quantize, FormatsAndChecks) {
  EXPECT_EQ(parse_weight_format("int4"), DType::int4);
  testing::expect_input_error([] { parse_weight_format("int3"); },
                              {"--weights", "int3", "bf16, fp8, int8, int4"});
  testing::expect_input_error([] { parse_kv_format("int4"); }, {"--kv", "bf16, fp8, int8"});
  testing::expect_input_error([] { parse_activation_format("fp8"); }, {"--activations"});
  QuantConfig w8a8;
  w8a8.activations = DType::int8;
  testing::expect_input_error([&] { check_quant_config(w8a8, 64, 128, 64); },
                              {"needs --weights int8"});
  QuantConfig int4;
  int4.weights = DType::int4;
  testing::expect_input_error([&] { check_quant_config(int4, 64, 128, 64); },
                              {"groups of 128", "64"});
  int4.group_size = 32;
  EXPECT_NO_THROW(check_quant_config(int4, 64, 128, 64));
  EXPECT_EQ(int4.describe(), "int4 g32");
}

// x maxima [4, 1], w maxima [1, 4], α = 0.5: s = [2, 0.5].
TEST(SmoothQuant, FactorsByHand) {
  SmoothQuantStats stats = SmoothQuantStats::zeros(1, 2);
  stats.qkv_input[0] = {4, 1};
  stats.qkv_weight[0] = {1, 4};
  stats.gate_up_input[0] = {0, 1};  // a channel that never fired: clamped, not 0
  stats.gate_up_weight[0] = {1, 1};
  const auto s = smoothing_factors(stats, 0.5);
  EXPECT_FLOAT_EQ(s.qkv[0][0], 2.0f);
  EXPECT_FLOAT_EQ(s.qkv[0][1], 0.5f);
  EXPECT_FLOAT_EQ(s.gate_up[0][0], std::sqrt(1e-5f));  // 0 taken as 1e-5, not 0
  // x · Wᵀ is unchanged by the migration (up to the bf16 rounding of the norm weight).
  float w[] = {1.0f, 2.0f};
  float norm[] = {1.0f, 1.0f};
  scale_weight_columns(w, 1, 2, s.qkv[0]);
  divide_norm_weight(norm, 2, s.qkv[0]);
  EXPECT_FLOAT_EQ(norm[0] * w[0] + norm[1] * w[1], 1.0f + 2.0f);
}

LlamaModel tiny_model() {
  LlamaModel model;
  model.config = parse_llama_config(testing::tiny_qwen_config_json(), "tiny", "tiny config");
  model.weights = random_llama_weights(model.config, 5);
  return model;
}

// Last-token logits of a 24-token prompt on the CPU reference under `quant`.
std::vector<float> logits_under(const QuantConfig& quant) {
  auto backend = make_cpu_backend(tiny_model(), 64, 16, quant);
  SequenceChunk chunk;
  for (int t = 0; t < 24; ++t) chunk.tokens.push_back((t * 53 + 7) % 256);
  chunk.block_table = {0, 1};
  chunk.all_logits = true;
  return backend->forward({{chunk}}).logits;
}

double relative_error(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double{a[i]} - ref[i]) * (double{a[i]} - ref[i]);
    den += double{ref[i]} * ref[i];
  }
  return std::sqrt(num / den);
}

// Each format moves the logits away from the unquantized model's, by an amount that follows its
// precision: int8 weights well under int4's. The bound of 0.5 is what int4 needs on random
// weights: a group of 32 Gaussian weights has absmax ≈ 2.1σ, a step of 2·absmax/15 ≈ 0.28σ and
// rounding noise of step/√12 ≈ 8% per projection, over the 15 projections of two layers.
TEST(QuantizedCpuReference, ErrorFollowsPrecision) {
  const auto reference = logits_under({});
  auto error_of = [&](DType weights, DType kv, DType activations) {
    QuantConfig quant;
    quant.weights = weights;
    quant.kv = kv;
    quant.activations = activations;
    quant.group_size = 32;
    return relative_error(logits_under(quant), reference);
  };
  const double int8 = error_of(DType::int8, DType::bf16, DType::bf16);
  const double int4 = error_of(DType::int4, DType::bf16, DType::bf16);
  const double fp8 = error_of(DType::fp8, DType::bf16, DType::bf16);
  const double w8a8 = error_of(DType::int8, DType::bf16, DType::int8);
  const double kv_int8 = error_of(DType::bf16, DType::int8, DType::bf16);
  const double kv_fp8 = error_of(DType::bf16, DType::fp8, DType::bf16);
  for (double e : {int8, int4, fp8, w8a8, kv_int8, kv_fp8}) {
    EXPECT_GT(e, 1e-5);  // quantization did something
    EXPECT_LT(e, 0.5);
  }
  EXPECT_LT(int8, int4 / 4);   // 4 more bits: about 16x finer steps
  EXPECT_LT(kv_int8, kv_fp8);  // 8 bits of mantissa-equivalent against E4M3's 4
  std::cout << "relative logit error: int8 " << int8 << ", int4 " << int4 << ", fp8 " << fp8
            << ", w8a8 " << w8a8 << ", kv int8 " << kv_int8 << ", kv fp8 " << kv_fp8 << "\n";
}

// The W8A8 model's calibration collects the inputs' maxima, and its factors migrate the weights:
// with α = 0 the factors are 1 / max|W_j| and every smoothed weight column's maximum is 1.
TEST(QuantizedCpuReference, SmoothQuantCalibration) {
  auto model = tiny_model();
  CpuBackend backend(model.config, model.weights, 16, 4);
  const auto stats = calibrate_smoothquant(backend, 40, 3);
  for (const auto& layer : stats.qkv_input) {
    EXPECT_GT(*std::min_element(layer.begin(), layer.end()), 0.0f);
  }
  const auto s = smoothing_factors(stats, 0.0);
  std::vector<float> q = model.weights.layers[0].q_proj;
  scale_weight_columns(q.data(), model.config.model.q_dim(), 64, s.qkv[0]);
  std::vector<float> maxima(64, 0.0f);
  merge_column_absmax(q.data(), model.config.model.q_dim(), 64, maxima);
  for (float m : maxima) EXPECT_LE(m, 1.0f + 1e-6f);
}

}  // namespace
}  // namespace inferlab::engine
