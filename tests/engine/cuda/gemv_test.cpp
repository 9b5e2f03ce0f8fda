// The GEMV kernel (1–16 rows) against a double-precision CPU dot product on the same bf16
// values, against cuBLASLt through LtGemm with the kernel switched off, and run twice for
// bit-reproducibility. Without a GPU the tests skip.
#include <gtest/gtest.h>

#include "engine/cuda_backend.hpp"

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/bf16.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/gemm.hpp"
#include "engine/cuda/gemv.hpp"

namespace inferlab::engine {
namespace {

using bf16 = __nv_bfloat16;
using cuda::DeviceBuffer;

#define REQUIRE_GPU() \
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU"

std::vector<uint16_t> random_bits(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint16_t> bits(n);
  for (auto& b : bits) b = float_to_bf16(normal(rng));
  return bits;
}

DeviceBuffer<bf16> to_device(const std::vector<uint16_t>& bits) {
  DeviceBuffer<bf16> buffer(bits.size());
  buffer.upload(reinterpret_cast<const bf16*>(bits.data()), bits.size());
  return buffer;
}

struct Case {
  int64_t rows, in, out;
  bool bias, fp32;
};

// y as float (bf16 widened when !fp32), from `gemm` (GEMV on or off).
std::vector<float> run(cuda::LtGemm& gemm, const Case& c, const DeviceBuffer<bf16>& x,
                       const DeviceBuffer<bf16>& w, const DeviceBuffer<bf16>* bias) {
  const size_t n = static_cast<size_t>(c.rows * c.out);
  DeviceBuffer<float> y32(c.fp32 ? n : 1);
  DeviceBuffer<bf16> y16(c.fp32 ? 1 : n);
  void* y = c.fp32 ? static_cast<void*>(y32.data()) : static_cast<void*>(y16.data());
  gemm.linear(x.data(), c.rows, w.data(), bias ? bias->data() : nullptr, c.in, c.out, y, c.fp32,
              nullptr);
  INFERLAB_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> out(n);
  if (c.fp32) {
    y32.download(out.data(), n);
  } else {
    std::vector<uint16_t> bits(n);
    y16.download(reinterpret_cast<bf16*>(bits.data()), n);
    for (size_t i = 0; i < n; ++i) out[i] = bf16_to_float(bits[i]);
  }
  return out;
}

// Tolerance: fp32 accumulation of `in` products (relative error ~ in · 2^-24 of Σ|x·w|) plus,
// for bf16 output, the rounding of the result (2^-8 relative).
void expect_matches_reference(const Case& c, const std::vector<float>& got,
                              const std::vector<uint16_t>& x, const std::vector<uint16_t>& w,
                              const std::vector<uint16_t>& bias) {
  int bad = 0;
  for (int64_t r = 0; r < c.rows; ++r) {
    for (int64_t o = 0; o < c.out; ++o) {
      double sum = 0, magnitude = 0;
      for (int64_t k = 0; k < c.in; ++k) {
        const double p = double(bf16_to_float(x[r * c.in + k])) * bf16_to_float(w[o * c.in + k]);
        sum += p;
        magnitude += std::abs(p);
      }
      if (c.bias) sum += bf16_to_float(bias[o]);
      const double tolerance = 1e-6 * magnitude + (c.fp32 ? 1e-6 : std::abs(sum) / 256 + 1e-6);
      const float value = got[r * c.out + o];
      if (std::abs(value - sum) > tolerance && ++bad <= 5) {
        ADD_FAILURE() << "rows " << c.rows << " in " << c.in << " out " << c.out << ": y[" << r
                      << "][" << o << "] = " << value << ", reference " << sum;
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(CudaGemv, MatchesTheCpuReferenceAndCublasLt) {
  REQUIRE_GPU();
  const std::vector<Case> cases = {
      {1, 8, 1, false, false},      {1, 64, 5, true, false},        {2, 2048, 128, false, true},
      {3, 4096, 4096, true, false}, {7, 1000, 33, false, false},    {8, 14336, 64, false, true},
      {16, 4104, 40, true, false},  {16, 2048, 3072, false, false}, {1, 4096, 6144, false, false},
      {4, 8192, 24, false, true},
  };
  cuda::LtGemm with_gemv, without_gemv;
  with_gemv.set_gemv_max_rows(cuda::kGemvMaxRows);  // the kernel itself, at every row count
  without_gemv.set_gemv(false);
  unsigned seed = 1;
  for (const Case& c : cases) {
    const auto x = random_bits(static_cast<size_t>(c.rows * c.in), seed++);
    const auto w = random_bits(static_cast<size_t>(c.out * c.in), seed++);
    const auto bias = random_bits(static_cast<size_t>(c.out), seed++);
    auto dx = to_device(x), dw = to_device(w), db = to_device(bias);
    EXPECT_TRUE(cuda::gemv_supported(dx.data(), c.rows, dw.data(), c.in));
    const auto got = run(with_gemv, c, dx, dw, c.bias ? &db : nullptr);
    expect_matches_reference(c, got, x, w, bias);
    const auto again = run(with_gemv, c, dx, dw, c.bias ? &db : nullptr);
    EXPECT_EQ(std::memcmp(got.data(), again.data(), got.size() * sizeof(float)), 0)
        << "not bit-reproducible: rows " << c.rows << " in " << c.in << " out " << c.out;
    const auto lt = run(without_gemv, c, dx, dw, c.bias ? &db : nullptr);
    expect_matches_reference(c, lt, x, w, bias);  // (cuBLASLt has no bias epilogue with fp32 out)
  }
}

TEST(CudaGemv, LargeOutputRowOfTheLmHead) {
  REQUIRE_GPU();
  const Case c{1, 2048, 128256, false, true};
  const auto x = random_bits(static_cast<size_t>(c.in), 90);
  const auto w = random_bits(static_cast<size_t>(c.out * c.in), 91);
  auto dx = to_device(x), dw = to_device(w);
  cuda::LtGemm gemm;
  const auto got = run(gemm, c, dx, dw, nullptr);
  // Every 997th output against the reference (the whole row takes long on the CPU).
  int bad = 0;
  for (int64_t o = 0; o < c.out; o += 997) {
    double sum = 0, magnitude = 0;
    for (int64_t k = 0; k < c.in; ++k) {
      const double p = double(bf16_to_float(x[k])) * bf16_to_float(w[o * c.in + k]);
      sum += p;
      magnitude += std::abs(p);
    }
    if (std::abs(got[o] - sum) > 1e-6 * magnitude + 1e-6 && ++bad <= 5) {
      ADD_FAILURE() << "y[" << o << "] = " << got[o] << ", reference " << sum;
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(CudaGemv, UnsupportedShapesFallBackToCublasLt) {
  REQUIRE_GPU();
  DeviceBuffer<bf16> x(64), w(64 * 4);
  EXPECT_FALSE(cuda::gemv_supported(x.data(), 17, w.data(), 8));     // more than 16 rows
  EXPECT_FALSE(cuda::gemv_supported(x.data(), 1, w.data(), 12));     // in not a multiple of 8
  EXPECT_FALSE(cuda::gemv_supported(x.data() + 1, 1, w.data(), 8));  // unaligned x
  EXPECT_TRUE(cuda::gemv_supported(x.data(), 16, w.data(), 16));
}

}  // namespace
}  // namespace inferlab::engine
#else
TEST(CudaGemv, NeedsCuda) {
  GTEST_SKIP() << "built without CUDA";
}
#endif
