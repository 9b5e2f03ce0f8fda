// GPU sampling (engine/cuda/sampling_kernels) against the CPU reference:
// pick_token(sampling_distribution(row, params), u) for every row and draw.
#ifdef INFERLAB_ENGINE_HAVE_CUDA

#include "engine/cuda/sampling_kernels.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda_backend.hpp"
#include "engine/sampling.hpp"

namespace inferlab::engine::cuda {
namespace {

// Runs sample_rows on host data (rows × vocab logits, one RowSampling per row).
std::vector<int32_t> gpu_sample(const std::vector<float>& logits, int vocab,
                                const std::vector<RowSampling>& params) {
  const int rows = static_cast<int>(params.size());
  DeviceBuffer<float> d_logits(logits.size());
  d_logits.upload(logits.data(), logits.size());
  DeviceBuffer<RowSampling> d_params(params.size());
  d_params.upload(params.data(), params.size());
  DeviceBuffer<int32_t> d_ids(params.size());
  const size_t bytes = sampling_workspace_bytes(rows, vocab);
  DeviceBuffer<char> workspace(bytes);
  sample_rows(d_logits.data(), rows, vocab, d_params.data(), d_ids.data(), workspace.data(), bytes,
              nullptr);
  INFERLAB_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<int32_t> ids(params.size());
  d_ids.download(ids.data(), ids.size());
  return ids;
}

SamplingParams cpu_params(const RowSampling& p) {
  // The GPU sees float temperature and top_p: give the CPU the same values.
  return {static_cast<double>(p.temperature), p.top_k, static_cast<double>(p.top_p)};
}

// Where fp32 on the GPU may legitimately differ from double on the CPU: u within `margin` of a
// running probability of the kept distribution, or the top_p cutoff within `margin` of a running
// probability after top_k.
bool near_boundary(std::span<const float> row, const RowSampling& p, double u) {
  // fp32 exp is within ~2e-7 relative of double; a flat row's tokens are ~8e-6 each.
  constexpr double kMargin = 2e-6;
  SamplingParams params = cpu_params(p);
  if (params.top_p < 1.0) {
    SamplingParams no_p = params;
    no_p.top_p = 1.0;
    double cumulative = 0;
    for (const auto& [token, prob] : sampling_distribution(row, no_p)) {
      cumulative += prob;
      if (std::abs(cumulative - params.top_p) < kMargin) return true;
    }
  }
  double cumulative = 0;
  for (const auto& [token, prob] : sampling_distribution(row, params)) {
    cumulative += prob;
    if (std::abs(cumulative - u) < kMargin) return true;
  }
  return false;
}

// Random logits with the shapes that matter: a large spread, exact ties (copied values),
// and a few NaN and -inf.
std::vector<float> random_row(int vocab, double scale, std::mt19937_64& gen) {
  std::normal_distribution<float> normal(0.0f, static_cast<float>(scale));
  std::vector<float> row(static_cast<size_t>(vocab));
  for (float& x : row) x = normal(gen);
  std::uniform_int_distribution<int> any(0, vocab - 1);
  for (int i = 0; i < std::max(1, vocab / 50); ++i) row[any(gen)] = row[any(gen)];
  if (vocab >= 100) {
    for (int i = 0; i < vocab / 200; ++i) row[any(gen)] = std::numeric_limits<float>::quiet_NaN();
    for (int i = 0; i < vocab / 200; ++i) row[any(gen)] = -std::numeric_limits<float>::infinity();
  }
  return row;
}

// For each parameter set: `distinct` logits rows × `draws` uniform draws, one GPU row each; the
// GPU pick must equal the CPU's except near a boundary (counted, and rare).
void expect_matches_cpu(int vocab, int distinct, int draws, double scale,
                        const std::vector<RowSampling>& settings, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<std::vector<float>> rows;
  for (int i = 0; i < distinct; ++i) rows.push_back(random_row(vocab, scale, gen));
  int checked = 0, near = 0;
  for (const RowSampling& setting : settings) {
    std::vector<float> logits;
    std::vector<RowSampling> params;
    for (const auto& row : rows) {
      for (int d = 0; d < draws; ++d) {
        logits.insert(logits.end(), row.begin(), row.end());
        RowSampling p = setting;
        p.uniform = d == 0 ? 0.0 : d == 1 ? 0.999 : uniform(gen);
        params.push_back(p);
      }
    }
    const auto ids = gpu_sample(logits, vocab, params);
    std::vector<std::pair<int32_t, double>> distribution;  // one sort per distinct row
    for (size_t r = 0; r < params.size(); ++r) {
      std::span<const float> row(rows[r / draws]);
      if (r % draws == 0) distribution = sampling_distribution(row, cpu_params(params[r]));
      const int32_t expected = pick_token(distribution, params[r].uniform);
      const std::string what =
          "vocab " + std::to_string(vocab) + " T " + std::to_string(setting.temperature) +
          " top_k " + std::to_string(setting.top_k) + " top_p " + std::to_string(setting.top_p) +
          " u " + std::to_string(params[r].uniform) + " row " + std::to_string(r);
      if (ids[r] != expected && near_boundary(row, params[r], params[r].uniform)) {
        ++near;
        continue;
      }
      EXPECT_EQ(ids[r], expected) << what;
      ++checked;
    }
  }
  // Near-boundary draws have probability ~1e-5 each: a handful at most.
  EXPECT_LE(near, 2) << "of " << checked;
}

RowSampling setting(float temperature, int top_k, float top_p) {
  RowSampling p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  return p;
}

const std::vector<RowSampling>& all_settings() {
  static const std::vector<RowSampling> settings = {
      setting(1.0f, 0, 1.0f),  setting(0.7f, 0, 1.0f),  setting(1.5f, 0, 1.0f),
      setting(1.0f, 1, 1.0f),  setting(1.0f, 5, 1.0f),  setting(0.8f, 50, 1.0f),
      setting(1.0f, 0, 0.5f),  setting(1.2f, 0, 0.9f),  setting(1.0f, 50, 0.9f),
      setting(2.0f, 5, 0.5f),  setting(0.5f, 0, 0.99f), setting(1.0f, 100000, 0.9f),
      setting(0.0f, 50, 0.9f),
  };
  return settings;
}

TEST(CudaSampling, GreedyIsArgmaxWithTiesAndNaN) {
  if (!engine::cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::vector<float>> rows = {
      {0.1f, 3.0f, -1.0f, 3.0f, 2.0f, 3.0f, 0.0f},   {nan, 1.0f, 2.0f, 2.0f, nan, -5.0f, 1.0f},
      {nan, nan, nan, nan, nan, nan, nan},           {-inf, nan, -inf, -inf, nan, -inf, -inf},
      {-0.0f, 0.0f, -0.0f, -1.0f, -2.0f, nan, -inf}, {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, inf},
  };
  std::vector<float> logits;
  std::vector<RowSampling> params;
  for (const auto& row : rows) {
    for (const RowSampling& p :
         {setting(0.0f, 0, 1.0f), setting(1.0f, 1, 0.5f), setting(-1.0f, 0, 1.0f)}) {
      logits.insert(logits.end(), row.begin(), row.end());
      params.push_back(p);
    }
  }
  const auto ids = gpu_sample(logits, 7, params);
  for (size_t r = 0; r < params.size(); ++r) EXPECT_EQ(ids[r], argmax(rows[r / 3])) << "row " << r;

  // A large vocabulary with the maximum repeated: the lowest id wins.
  std::mt19937_64 gen(7);
  std::vector<float> big = random_row(128256, 3.0, gen);
  const float top = *std::max_element(big.begin(), big.end(),
                                      [](float a, float b) { return std::isnan(a) || a < b; });
  big[128255] = top + 1;
  big[77777] = top + 1;
  big[90000] = top + 1;
  const auto big_ids = gpu_sample(big, 128256, {setting(0.0f, 0, 1.0f)});
  EXPECT_EQ(big_ids[0], 77777);
  EXPECT_EQ(big_ids[0], argmax(big));
}

TEST(CudaSampling, SmallOddVocabMatchesCpu) {
  if (!engine::cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  expect_matches_cpu(7, 8, 16, 1.0, all_settings(), 1);
  expect_matches_cpu(1000, 4, 16, 2.0, all_settings(), 2);
}

TEST(CudaSampling, LargeVocabMatchesCpu) {
  if (!engine::cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  expect_matches_cpu(128256, 2, 12, 3.0, all_settings(), 3);
  // A large spread: most of the vocabulary underflows, a few tokens hold the mass.
  expect_matches_cpu(151936, 1, 12, 20.0, all_settings(), 4);
}

TEST(CudaSampling, FlatLogitsAndExactTies) {
  if (!engine::cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  // Every logit one of four values: long runs of ties cross every cutoff and pick.
  const int vocab = 128256;
  std::mt19937_64 gen(11);
  std::uniform_int_distribution<int> level(0, 3);
  std::vector<float> row(vocab);
  for (float& x : row) x = 0.25f * static_cast<float>(level(gen));
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  int near = 0;
  for (const RowSampling& s : all_settings()) {
    std::vector<float> logits;
    std::vector<RowSampling> params;
    for (int d = 0; d < 16; ++d) {
      logits.insert(logits.end(), row.begin(), row.end());
      RowSampling p = s;
      p.uniform = uniform(gen);
      params.push_back(p);
    }
    const auto ids = gpu_sample(logits, vocab, params);
    const auto distribution = sampling_distribution(row, cpu_params(s));
    for (size_t r = 0; r < params.size(); ++r) {
      const int32_t expected = pick_token(distribution, params[r].uniform);
      if (ids[r] != expected && near_boundary(row, params[r], params[r].uniform)) {
        ++near;
        continue;
      }
      EXPECT_EQ(ids[r], expected) << "top_k " << s.top_k << " top_p " << s.top_p << " u "
                                  << params[r].uniform;
    }
  }
  EXPECT_LE(near, 2);
}

TEST(CudaSampling, GraphReplayGivesTheSameIds) {
  if (!engine::cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  const int vocab = 128256, rows = 64;
  std::mt19937_64 gen(5);
  std::vector<float> logits;
  std::vector<RowSampling> params;
  for (int r = 0; r < rows; ++r) {
    const auto row = random_row(vocab, 2.0, gen);
    logits.insert(logits.end(), row.begin(), row.end());
    RowSampling p = setting(r % 4 == 0 ? 0.0f : 0.9f, r % 3 == 0 ? 40 : 0, r % 2 ? 0.9f : 1.0f);
    p.uniform = std::uniform_real_distribution<double>(0.0, 1.0)(gen);
    params.push_back(p);
  }
  const auto eager = gpu_sample(logits, vocab, params);

  DeviceBuffer<float> d_logits(logits.size());
  d_logits.upload(logits.data(), logits.size());
  DeviceBuffer<RowSampling> d_params(params.size());
  d_params.upload(params.data(), params.size());
  DeviceBuffer<int32_t> d_ids(params.size());
  cudaStream_t stream;
  INFERLAB_CUDA_CHECK(cudaStreamCreate(&stream));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  INFERLAB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  sample_rows(d_logits.data(), rows, vocab, d_params.data(), d_ids.data(), nullptr,
              sampling_workspace_bytes(rows, vocab), stream);
  INFERLAB_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  INFERLAB_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 3; ++i) INFERLAB_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  INFERLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<int32_t> replayed(rows);
  d_ids.download(replayed.data(), replayed.size());
  EXPECT_EQ(replayed, eager);
  INFERLAB_CUDA_CHECK(cudaGraphExecDestroy(exec));
  INFERLAB_CUDA_CHECK(cudaGraphDestroy(graph));
  INFERLAB_CUDA_CHECK(cudaStreamDestroy(stream));
}

TEST(CudaSampling, RejectsBadShapes) {
  if (!engine::cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  EXPECT_THROW(sample_rows(nullptr, 1, 0, nullptr, nullptr, nullptr, 0, nullptr),
               std::invalid_argument);
  EXPECT_THROW(sample_rows(nullptr, 1, (1 << 19) + 1, nullptr, nullptr, nullptr, 0, nullptr),
               std::invalid_argument);
  EXPECT_THROW(sample_rows(nullptr, -1, 10, nullptr, nullptr, nullptr, 0, nullptr),
               std::invalid_argument);
  EXPECT_NO_THROW(sample_rows(nullptr, 0, 10, nullptr, nullptr, nullptr, 0, nullptr));
}

}  // namespace
}  // namespace inferlab::engine::cuda

#endif  // INFERLAB_ENGINE_HAVE_CUDA
