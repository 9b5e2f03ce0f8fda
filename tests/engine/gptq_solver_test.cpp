// GPTQ's solver (engine/quant/gptq_solver.hpp): with uncorrelated inputs of equal variance it is
// round to nearest exactly; with correlated inputs its outputs' error on those inputs is well
// below round to nearest's.
#include "engine/quant/gptq_solver.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <random>
#include <stdexcept>

#include "engine/quant/quantize.hpp"

namespace inferlab::engine {
namespace {

std::vector<float> random_weights(int64_t out, int64_t in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> w(static_cast<size_t>(out * in));
  for (float& v : w) v = normal(rng);
  return w;
}

// Inputs with a few strong shared directions (as a transformer's hidden states have): x = A z
// + small noise, z of 4 dimensions.
std::vector<float> correlated_inputs(int64_t rows, int64_t in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> a(static_cast<size_t>(in * 4));
  for (float& v : a) v = normal(rng);
  std::vector<float> x(static_cast<size_t>(rows * in));
  for (int64_t r = 0; r < rows; ++r) {
    float z[4];
    for (float& v : z) v = normal(rng);
    for (int64_t i = 0; i < in; ++i) {
      float sum = 0.05f * normal(rng);
      for (int k = 0; k < 4; ++k) sum += a[i * 4 + k] * z[k];
      x[r * in + i] = sum;
    }
  }
  return x;
}

// Σ over rows and outputs of (x · (w − ŵ))².
double output_error(const std::vector<float>& x, int64_t rows, const std::vector<float>& w,
                    const std::vector<float>& quantized, int64_t out, int64_t in) {
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double sum = 0;
      for (int64_t k = 0; k < in; ++k) {
        sum += double{x[r * in + k]} * (w[o * in + k] - quantized[o * in + k]);
      }
      total += sum * sum;
    }
  }
  return total;
}

TEST(GptqSolver, HessianIsTheSumOfOuterProducts) {
  InputHessian h(2);
  const float x[] = {1, 2, 3, -1};  // rows (1, 2) and (3, -1)
  h.add(x, 2);
  EXPECT_EQ(h.rows(), 2);
  // [[1 + 9, 2 - 3], [2 - 3, 4 + 1]]
  EXPECT_EQ(h.values(), (std::vector<double>{10, -1, -1, 5}));
}

TEST(GptqSolver, UncorrelatedInputsGiveRoundToNearest) {
  // H = c·I: no column's error has anywhere to go, so every column rounds alone.
  const int64_t out = 6, in = 256;
  const std::vector<float> w = random_weights(out, in, 1);
  InputHessian identity(in);
  std::vector<float> unit(static_cast<size_t>(in), 0.0f);
  for (int64_t i = 0; i < in; ++i) {
    unit.assign(unit.size(), 0.0f);
    unit[static_cast<size_t>(i)] = 3.0f;
    identity.add(unit.data(), 1);
  }
  for (DType format : {DType::int4, DType::int8}) {
    GptqOptions options;
    options.format = format;
    const QuantizedMatrix gptq = gptq_quantize(w, out, in, identity, options);
    const QuantizedMatrix rtn = quantize_matrix(w.data(), out, in, format, 128);
    EXPECT_EQ(gptq.data, rtn.data) << dtype_name(format);
    EXPECT_EQ(gptq.scales, rtn.scales) << dtype_name(format);
    EXPECT_EQ(gptq.zeros, rtn.zeros) << dtype_name(format);
  }
}

TEST(GptqSolver, CorrelatedInputsLoseFarLessThanRoundToNearest) {
  const int64_t out = 16, in = 256, rows = 512;
  const std::vector<float> w = random_weights(out, in, 2);
  const std::vector<float> x = correlated_inputs(rows, in, 3);
  InputHessian h(in);
  h.add(x.data(), rows);
  for (DType format : {DType::int4, DType::int8}) {
    GptqOptions options;
    options.format = format;
    const auto gptq = dequantize_matrix(gptq_quantize(w, out, in, h, options));
    const auto rtn = dequantize_matrix(quantize_matrix(w.data(), out, in, format, 128));
    const double gptq_error = output_error(x, rows, w, gptq, out, in);
    const double rtn_error = output_error(x, rows, w, rtn, out, in);
    std::cout << dtype_name(format) << ": output error GPTQ " << gptq_error << ", RTN " << rtn_error
              << "\n";
    EXPECT_LT(gptq_error, 0.5 * rtn_error) << dtype_name(format);
  }
}

TEST(GptqSolver, DeadInputsAreZerosAndBadShapesAreRefused) {
  const int64_t out = 2, in = 4;
  const std::vector<float> w = {1, 2, 3, 4, -1, -2, -3, -4};
  InputHessian h(in);
  const float x[] = {1, 0, 1, 1, 2, 0, -1, 1};  // input 1 is always zero
  h.add(x, 2);
  GptqOptions options;
  options.format = DType::int8;
  const auto values = dequantize_matrix(gptq_quantize(w, out, in, h, options));
  EXPECT_EQ(values[1], 0.0f);
  EXPECT_EQ(values[5], 0.0f);
  EXPECT_THROW(gptq_quantize(w, out, 3, h, options), std::invalid_argument);
  options.format = DType::fp8;
  EXPECT_THROW(gptq_quantize(w, out, in, h, options), std::invalid_argument);
  options.format = DType::int4;
  options.group_size = 3;
  EXPECT_THROW(gptq_quantize(w, out, in, h, options), std::invalid_argument);
}

}  // namespace
}  // namespace inferlab::engine
