// The probe's kernels against CPU references. They need a GPU: without one they skip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include "probe/probe.hpp"

#ifdef INFERLAB_TEST_HAVE_CUDA
#include "probe/cuda/llm_kernels.cuh"
#endif

namespace inferlab {
namespace {

#define REQUIRE_GPU()                                                            \
  do {                                                                           \
    if (visible_gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU on this machine"; \
  } while (0)

// Rounds to bf16 (round to nearest even), as the kernels store their inputs.
float bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  bits += 0x7fff + ((bits >> 16) & 1);
  bits &= 0xffff0000u;
  float y;
  std::memcpy(&y, &bits, 4);
  return y;
}

std::vector<float> random_vector(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double rel) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], rel * std::fabs(want[i]) + 1e-3) << "element " << i;
  }
}

TEST(GpuProbe, ProbeIsBuiltWhereCudaIs) {
#ifdef INFERLAB_TEST_HAVE_CUDA
  EXPECT_TRUE(probe_available());
#else
  EXPECT_FALSE(probe_available());
  EXPECT_EQ(visible_gpu_count(), 0);
#endif
}

#ifdef INFERLAB_TEST_HAVE_CUDA
TEST(GpuKernels, RmsNormMatchesCpu) {
  REQUIRE_GPU();
  const int rows = 5, hidden = 4096;
  auto x = random_vector(rows * hidden, 1), w = random_vector(hidden, 2);
  auto got = probe::gpu_rmsnorm(x, w, rows, hidden, 1e-5f);
  std::vector<double> want(x.size());
  for (int r = 0; r < rows; ++r) {
    double ss = 0;
    for (int i = 0; i < hidden; ++i)
      ss += double(bf16(x[r * hidden + i])) * bf16(x[r * hidden + i]);
    double scale = 1.0 / std::sqrt(ss / hidden + 1e-5);
    for (int i = 0; i < hidden; ++i)
      want[r * hidden + i] = bf16(x[r * hidden + i]) * scale * bf16(w[i]);
  }
  expect_close(got, want, 1e-2);
}

TEST(GpuKernels, AddSiluMulSoftmaxRopeMatchCpu) {
  REQUIRE_GPU();
  auto a = random_vector(8 * 1024, 3), b = random_vector(8 * 1024, 4);
  std::vector<double> sum(a.size());
  for (size_t i = 0; i < a.size(); ++i) sum[i] = double(bf16(a[i])) + bf16(b[i]);
  expect_close(probe::gpu_add(a, b), sum, 1e-2);

  const int rows = 3, inter = 256;
  auto gu = random_vector(rows * 2 * inter, 5);
  std::vector<double> silu(rows * inter);
  for (int r = 0; r < rows; ++r) {
    for (int i = 0; i < inter; ++i) {
      double g = bf16(gu[r * 2 * inter + i]), u = bf16(gu[r * 2 * inter + inter + i]);
      silu[r * inter + i] = g / (1.0 + std::exp(-g)) * u;
    }
  }
  expect_close(probe::gpu_silu_mul(gu, rows, inter), silu, 2e-2);

  const int cols = 1000;
  auto s = random_vector(rows * cols, 6);
  std::vector<double> soft(s.size());
  for (int r = 0; r < rows; ++r) {
    double m = -1e30, z = 0;
    for (int c = 0; c < cols; ++c) m = std::max<double>(m, bf16(s[r * cols + c]));
    for (int c = 0; c < cols; ++c) z += std::exp(bf16(s[r * cols + c]) - m);
    for (int c = 0; c < cols; ++c) soft[r * cols + c] = std::exp(bf16(s[r * cols + c]) - m) / z;
  }
  expect_close(probe::gpu_softmax(s, rows, cols), soft, 2e-2);

  const int tokens = 4, heads = 2, dim = 8;
  auto q = random_vector(tokens * heads * dim, 7);
  std::vector<double> rope(q.size());
  for (int t = 0; t < tokens; ++t) {
    for (int h = 0; h < heads; ++h) {
      for (int j = 0; j < dim / 2; ++j) {
        double angle = t * std::pow(10000.0, -2.0 * j / dim);
        size_t base = (size_t(t) * heads + h) * dim;
        double x0 = bf16(q[base + j]), x1 = bf16(q[base + j + dim / 2]);
        rope[base + j] = x0 * std::cos(angle) - x1 * std::sin(angle);
        rope[base + j + dim / 2] = x1 * std::cos(angle) + x0 * std::sin(angle);
      }
    }
  }
  expect_close(probe::gpu_rope(q, tokens, heads, dim, 10000.0f), rope, 2e-2);
}

TEST(GpuProbe, QuickProfileHasTheSchema) {
  REQUIRE_GPU();
  std::ostringstream progress;
  nlohmann::json p = run_probe({true, 0, {}}, progress);
  for (const char* key : {"fp64_simt", "fp32_simt", "fp16_simt", "tf32_tensor", "fp16_tensor",
                          "bf16_tensor", "fp8_tensor", "int8_tensor"}) {
    ASSERT_TRUE(p["compute"].contains(key)) << key;
    EXPECT_GT(p["compute"][key]["flops_per_s"].get<double>(), 1e12) << key;
  }
  for (const char* level : {"hbm", "l2", "shared"}) {
    for (const char* key : {"read_bps", "write_bps", "copy_bps", "latency_ns"}) {
      EXPECT_GT(p["memory"][level][key].get<double>(), 0.0) << level << "." << key;
    }
  }
  // The hierarchy comes out of the measurement itself.
  EXPECT_GT(p["memory"]["shared"]["read_bps"].get<double>(),
            p["memory"]["l2"]["read_bps"].get<double>());
  EXPECT_GT(p["memory"]["l2"]["read_bps"].get<double>(),
            p["memory"]["hbm"]["read_bps"].get<double>());
  EXPECT_LT(p["memory"]["l2"]["latency_ns"].get<double>(),
            p["memory"]["hbm"]["latency_ns"].get<double>());
  EXPECT_EQ(p["memory"]["hbm"]["read_write_mix"].size(), 5u);
  EXPECT_FALSE(p["memory"]["hbm"]["access_patterns"].empty());
  EXPECT_GT(p["launch_overhead_us"].get<double>(), 0.0);
  EXPECT_GT(p["graph_launch_overhead_us"].get<double>(), 0.0);
  // A small real kernel costs at least what an empty one does.
  EXPECT_GE(p["graph_small_kernel_us"].get<double>(), p["graph_kernel_gap_us"].get<double>());
  EXPECT_GT(p["host"]["launch_us"].get<double>(), 0.0);
  EXPECT_GT(p["host"]["cpu_dispatch_ns"].get<double>(), 0.0);
  EXPECT_FALSE(p["sweeps"]["gemm"].empty());
  EXPECT_NE(progress.str().find("[probe 1/"), std::string::npos);
}
#endif

}  // namespace
}  // namespace inferlab
