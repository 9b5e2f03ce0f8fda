// The cuBLASLt runner's timed algorithm choice (projection_lt.hpp): bf16 GEMMs with and without
// the bias epilogue, tuned and untuned, against an fp64 CPU reference for row counts that tune a
// bucket (448, 512, ...) and that reuse its winner (447, 440, 500, ...), so a wrong reuse or a
// tuning launch that leaves D wrong would show; a call under graph capture is not tuned; the
// rows buckets; ProjectionTuning::lt_tune (off by default). Without a GPU the tests skip.
#include <gtest/gtest.h>

#include "engine/cuda_backend.hpp"

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/bf16.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/projection_lt.hpp"
#include "projection_reference.hpp"

namespace inferlab::engine {
namespace {

using cuda::DeviceBuffer;
using cuda::LtCall;
using cuda::LtKind;
using cuda::LtRunner;
using projection_test::Random;

#define REQUIRE_GPU() \
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU"

constexpr int64_t kOut = 768, kIn = 256, kMaxRows = 1024;
constexpr size_t kWorkspace = size_t{32} << 20;

std::vector<uint16_t> random_bits(size_t count, float scale, uint64_t seed) {
  Random random(seed);
  std::vector<uint16_t> bits(count);
  for (uint16_t& b : bits) b = float_to_bf16(scale * random.symmetric());
  return bits;
}

// Weights [kOut][kIn], rows [kMaxRows][kIn], bias [kOut], on the host and the device.
struct Problem {
  std::vector<uint16_t> w = random_bits(kOut * kIn, 0.1f, 1), x = random_bits(kMaxRows * kIn, 1, 2),
                        bias = random_bits(kOut, 1, 3);
  DeviceBuffer<uint16_t> dw{w.size()}, dx{x.size()}, dbias{bias.size()},
      dy{static_cast<size_t>(kMaxRows * kOut)};
  DeviceBuffer<unsigned char> workspace{kWorkspace};
  Problem() {
    dw.upload(w.data(), w.size());
    dx.upload(x.data(), x.size());
    dbias.upload(bias.data(), bias.size());
  }
  LtCall call(int64_t rows, bool with_bias) {
    return LtCall{LtKind::bf16, kOut,      rows,      kIn,   kOut,
                  dw.data(),    dx.data(), dy.data(), false, with_bias ? dbias.data() : nullptr};
  }
  // Runs the call with D poisoned (NaN bits) and checks D against fp64: within 2^-8 of each value
  // (bf16 rounding, twice over) plus 2^-12 · Σ|w·x| (fp32 accumulation).
  void run_and_check(LtRunner& runner, int64_t rows, bool with_bias, cudaStream_t stream) {
    SCOPED_TRACE("rows " + std::to_string(rows) + (with_bias ? ", bias" : ""));
    cuda::check_cuda(cudaMemset(dy.data(), 0xff, dy.bytes()), "poison D");
    ASSERT_TRUE(runner.run(call(rows, with_bias), stream));
    cuda::check_cuda(cudaStreamSynchronize(stream), "sync");
    check(rows, with_bias);
  }
  void check(int64_t rows, bool with_bias) {
    std::vector<uint16_t> y(static_cast<size_t>(rows * kOut));
    dy.download(y.data(), y.size());
    int bad = 0;
    for (int64_t r = 0; r < rows && bad < 5; ++r) {
      for (int64_t o = 0; o < kOut && bad < 5; ++o) {
        double sum = with_bias ? bf16_to_float(bias[o]) : 0.0, magnitude = std::abs(sum);
        for (int64_t i = 0; i < kIn; ++i) {
          const double p = double(bf16_to_float(w[o * kIn + i])) * bf16_to_float(x[r * kIn + i]);
          sum += p;
          magnitude += std::abs(p);
        }
        const double got = bf16_to_float(y[r * kOut + o]);
        const double tolerance = std::ldexp(std::abs(sum), -8) + std::ldexp(magnitude, -12);
        if (!(std::abs(got - sum) <= tolerance)) {
          ADD_FAILURE() << "row " << r << " out " << o << ": " << got << " vs " << sum;
          ++bad;
        }
      }
    }
  }
};

// Bucket-tuning order: the first n of a bucket is timed, the later ones reuse its winner.
const std::vector<int64_t> kRows = {448, 447, 440, 385, 512, 500, 449, 1,    8,
                                    16,  9,   17,  32,  256, 255, 257, 1000, 1024};

TEST(CudaLtTuning, TunedAndUntunedMatchTheReference) {
  REQUIRE_GPU();
  Problem p;
  for (bool tune : {true, false}) {
    LtRunner runner(p.workspace.data(), kWorkspace);
    runner.set_tuning(tune);
    for (bool with_bias : {false, true}) {
      for (int64_t rows : kRows) p.run_and_check(runner, rows, with_bias, nullptr);
      // Again, from the plans now settled.
      for (int64_t rows : {448, 440, 512}) p.run_and_check(runner, rows, with_bias, nullptr);
    }
    if (tune) {
      EXPECT_GT(runner.tuned_buckets(), 0u) << "expected several cuBLASLt candidates to time";
    } else {
      EXPECT_EQ(runner.tuned_buckets(), 0u);
    }
  }
}

TEST(CudaLtTuning, NoTuningUnderGraphCapture) {
  REQUIRE_GPU();
  Problem p;
  LtRunner runner(p.workspace.data(), kWorkspace);
  runner.set_tuning(true);
  cudaStream_t stream = nullptr;
  cuda::check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  cuda::check_cuda(cudaMemset(p.dy.data(), 0xff, p.dy.bytes()), "poison D");
  cuda::check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
  const bool ran = runner.run(p.call(448, true), stream);
  cudaGraph_t graph = nullptr;
  cuda::check_cuda(cudaStreamEndCapture(stream, &graph), "end capture");
  ASSERT_TRUE(ran);
  EXPECT_EQ(runner.tuned_buckets(), 0u);
  cudaGraphExec_t exec = nullptr;
  cuda::check_cuda(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  cuda::check_cuda(cudaGraphLaunch(exec, stream), "graph launch");
  cuda::check_cuda(cudaStreamSynchronize(stream), "sync");
  p.check(448, true);
  // Outside capture the same shape is tuned now.
  p.run_and_check(runner, 448, true, stream);
  EXPECT_EQ(runner.tuned_buckets(), 1u);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

// Off by default; ProjectionTuning::lt_tune turns it on (engine_tuning_test.cpp checks that
// INFERLAB_ENGINE_LT_TUNE=1 sets that field).
TEST(CudaLtTuning, OffByDefaultAndSwitchable) {
  REQUIRE_GPU();
  DeviceBuffer<unsigned char> workspace(1 << 20);
  LtRunner runner(workspace.data(), workspace.bytes());
  EXPECT_FALSE(runner.tuning());
  runner.set_tuning(true);
  EXPECT_TRUE(runner.tuning());
  runner.set_tuning(false);
  EXPECT_FALSE(runner.tuning());
}

}  // namespace
}  // namespace inferlab::engine
#endif

namespace inferlab::engine {
namespace {

TEST(CudaLtTuning, RowsBuckets) {
#ifndef INFERLAB_ENGINE_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA";
#else
  using cuda::LtRunner;
  EXPECT_EQ(LtRunner::rows_bucket(1), LtRunner::rows_bucket(16));
  EXPECT_NE(LtRunner::rows_bucket(16), LtRunner::rows_bucket(17));
  EXPECT_EQ(LtRunner::rows_bucket(385), LtRunner::rows_bucket(448));
  EXPECT_NE(LtRunner::rows_bucket(448), LtRunner::rows_bucket(449));
  EXPECT_EQ(LtRunner::rows_bucket(449), LtRunner::rows_bucket(512));
  int64_t previous = 0, buckets = 0;
  for (int64_t n = 1; n <= 2048; ++n) {
    const int64_t bucket = LtRunner::rows_bucket(n);
    EXPECT_GE(bucket, previous);
    if (bucket != previous) ++buckets;
    previous = bucket;
  }
  EXPECT_EQ(buckets, 44);
#endif
}

}  // namespace
}  // namespace inferlab::engine
