// Speed of the engine's decode projections at Llama 3 8B and Llama 3.2 1B shapes for 1, 4, 8
// and 16 rows: the GEMV kernel against cuBLASLt (LtGemm with the kernel switched off), as weight
// bytes read per second and that as a share of the probe's measured HBM read bandwidth. Each
// launch reads another copy of the weights (≥ 128 MB in all, past the 50 MB L2), as a decode
// step reads each layer's weights once; CUDA events around 20 launches; skipped without a GPU.
#include <benchmark/benchmark.h>

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/gemm.hpp"
#include "engine/cuda/gemv.hpp"
#include "engine/cuda_backend.hpp"
#include "gpu_bench_support.hpp"
#include "util/data_dir.hpp"

namespace {
using namespace inferlab::engine;
using bf16 = __nv_bfloat16;
using cuda::DeviceBuffer;

constexpr int kLaunches = 20;
constexpr double kMinWeightBytes = 128e6;

// Arguments: rows, in, out, GEMV on (1) or off (0).
void BM_DecodeProjection(benchmark::State& state) {
  if (!cuda_device_available()) return state.SkipWithError("no CUDA GPU");
  const int64_t rows = state.range(0), in = state.range(1), out = state.range(2);
  const double weight_bytes = 2.0 * static_cast<double>(in * out);
  const int copies = static_cast<int>(kMinWeightBytes / weight_bytes) + 1;
  DeviceBuffer<bf16> weights(static_cast<size_t>(copies * in * out));
  INFERLAB_CUDA_CHECK(cudaMemset(weights.data(), 0x3c, weights.bytes()));
  DeviceBuffer<bf16> x(static_cast<size_t>(rows * in)), y(static_cast<size_t>(rows * out));
  INFERLAB_CUDA_CHECK(cudaMemset(x.data(), 0x3c, x.bytes()));
  cuda::LtGemm gemm;
  // gemv:1 sends every row count here to the kernel (LtGemm's default takes 1-2 rows only).
  if (state.range(3) != 0) {
    gemm.set_gemv_max_rows(cuda::kGemvMaxRows);
  } else {
    gemm.set_gemv(false);
  }
  int next = 0;
  auto launch = [&] {
    gemm.linear(x.data(), rows, weights.data() + static_cast<int64_t>(next) * in * out, nullptr, in,
                out, y.data(), false, nullptr);
    next = (next + 1) % copies;
  };
  inferlab::bench::time_launches(state, kLaunches, weight_bytes, launch);
}

void shapes(benchmark::internal::Benchmark* b) {
  // Llama 3 8B: fused QKV, O, fused gate/up, down, LM head; Llama 3.2 1B: the same.
  const std::vector<std::pair<int64_t, int64_t>> in_out = {
      {4096, 6144}, {4096, 4096}, {4096, 28672}, {14336, 4096}, {4096, 128256},
      {2048, 3072}, {2048, 2048}, {2048, 16384}, {8192, 2048},  {2048, 128256}};
  for (int64_t rows : {1, 4, 8, 16}) {
    for (const auto& [in, out] : in_out) {
      for (int64_t gemv : {1, 0}) b->Args({rows, in, out, gemv});
    }
  }
  b->ArgNames({"rows", "in", "out", "gemv"});
}
BENCHMARK(BM_DecodeProjection)->Apply(shapes)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
#endif

BENCHMARK_MAIN();
