// GPU sampling (engine/cuda/sampling_kernels) at decode shapes: greedy and top-p (T 1, top_p
// 0.9) over 1 and 64 rows of a Llama 3 vocabulary (128256), timed with CUDA events around each
// launch (the kernel alone: logits and parameters are already on the device).
#include <benchmark/benchmark.h>

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <cstdint>
#include <random>
#include <vector>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/sampling_kernels.hpp"
#include "engine/cuda_backend.hpp"

namespace {
using namespace inferlab::engine;

// state.range(0): rows; state.range(1): 0 greedy, 1 top-p 0.9, 2 temperature only.
void BM_SampleRows(benchmark::State& state) {
  if (!cuda_device_available()) {
    state.SkipWithError("no CUDA GPU");
    return;
  }
  const int rows = static_cast<int>(state.range(0));
  const int vocab = 128256;
  std::mt19937_64 gen(1);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(static_cast<size_t>(rows) * vocab);
  for (float& x : logits) x = normal(gen);
  std::vector<cuda::RowSampling> params(static_cast<size_t>(rows));
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (auto& p : params) {
    p.temperature = state.range(1) == 0 ? 0.0f : 1.0f;
    p.top_p = state.range(1) == 1 ? 0.9f : 1.0f;
    p.uniform = uniform(gen);
  }
  cuda::DeviceBuffer<float> d_logits(logits.size());
  d_logits.upload(logits.data(), logits.size());
  cuda::DeviceBuffer<cuda::RowSampling> d_params(params.size());
  d_params.upload(params.data(), params.size());
  cuda::DeviceBuffer<int32_t> d_ids(params.size());
  const size_t bytes = cuda::sampling_workspace_bytes(rows, vocab);
  cuda::DeviceBuffer<char> workspace(bytes);
  cudaEvent_t start, stop;
  INFERLAB_CUDA_CHECK(cudaEventCreate(&start));
  INFERLAB_CUDA_CHECK(cudaEventCreate(&stop));
  auto launch = [&] {
    cuda::sample_rows(d_logits.data(), rows, vocab, d_params.data(), d_ids.data(), workspace.data(),
                      bytes, nullptr);
  };
  launch();  // warm-up
  INFERLAB_CUDA_CHECK(cudaDeviceSynchronize());
  for (auto _ : state) {
    INFERLAB_CUDA_CHECK(cudaEventRecord(start));
    launch();
    INFERLAB_CUDA_CHECK(cudaEventRecord(stop));
    INFERLAB_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    INFERLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    state.SetIterationTime(ms / 1e3);
  }
  state.counters["rows"] = rows;
  INFERLAB_CUDA_CHECK(cudaEventDestroy(start));
  INFERLAB_CUDA_CHECK(cudaEventDestroy(stop));
}
BENCHMARK(BM_SampleRows)
    ->ArgNames({"rows", "mode"})
    ->ArgsProduct({{1, 64, 256}, {0, 1, 2}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
#else
namespace {
void BM_SampleRows(benchmark::State& state) {
  state.SkipWithError("built without CUDA");
}
BENCHMARK(BM_SampleRows);
}  // namespace
#endif
BENCHMARK_MAIN();
