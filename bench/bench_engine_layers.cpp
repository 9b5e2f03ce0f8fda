// Speed of the engine's CUDA layer kernels (RMSNorm, residual add + RMSNorm, RoPE + KV write,
// SiLU×mul on the fused halves, embedding gather) at Llama 3 8B shapes for 1, 64 and 2048
// tokens: bytes moved per second, and that as a share of the probe's measured HBM read
// bandwidth for this GPU (data/profiles/<gpu>.json). Timed with CUDA events around 50 launches
// per iteration; skipped without a GPU.
#include <benchmark/benchmark.h>

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/layer_kernels.hpp"
#include "engine/cuda_backend.hpp"
#include "gpu_bench_support.hpp"
#include "util/data_dir.hpp"

namespace {
using namespace inferlab::engine;
using cuda::bf16;
using cuda::DeviceBuffer;

constexpr int kHidden = 4096, kInter = 14336, kHeads = 32, kKvHeads = 8, kHeadDim = 128;
constexpr int kVocab = 128256;
constexpr int kLaunches = 50;

// Times `launch` kLaunches times per iteration and reports bytes/s and the probe's share.
void run(benchmark::State& state, double bytes_per_launch, const std::function<void()>& launch) {
  if (!cuda_device_available()) {
    state.SkipWithError("no CUDA GPU");
    return;
  }
  inferlab::bench::time_launches(state, kLaunches, bytes_per_launch, launch);
}

DeviceBuffer<bf16> filled(size_t count) {
  DeviceBuffer<bf16> buffer(count);
  INFERLAB_CUDA_CHECK(cudaMemset(buffer.data(), 0x3c, buffer.bytes()));  // ≈ 0.0117 each
  return buffer;
}

void BM_RmsNorm(benchmark::State& state) {
  if (!cuda_device_available()) return state.SkipWithError("no CUDA GPU");
  const int tokens = static_cast<int>(state.range(0));
  auto x = filled(static_cast<size_t>(tokens) * kHidden), w = filled(kHidden);
  auto out = filled(x.size());
  run(state, 4.0 * tokens * kHidden,
      [&] { cuda::rms_norm(x.data(), w.data(), tokens, kHidden, 1e-5f, out.data(), nullptr); });
}

void BM_AddRmsNorm(benchmark::State& state) {
  if (!cuda_device_available()) return state.SkipWithError("no CUDA GPU");
  const int tokens = static_cast<int>(state.range(0));
  auto x = filled(static_cast<size_t>(tokens) * kHidden), d = filled(x.size());
  auto w = filled(kHidden), out = filled(x.size());
  run(state, 8.0 * tokens * kHidden, [&] {
    cuda::add_rms_norm(x.data(), d.data(), w.data(), tokens, kHidden, 1e-5f, out.data(), nullptr);
  });
}

// kv: 0 a bf16 cache, 1 int8, 2 fp8 (each key and value vector quantized, its scale written).
void BM_RopeKvWrite(benchmark::State& state) {
  if (!cuda_device_available()) return state.SkipWithError("no CUDA GPU");
  const int tokens = static_cast<int>(state.range(0));
  const inferlab::DType format = state.range(1) == 1   ? inferlab::DType::int8
                                 : state.range(1) == 2 ? inferlab::DType::fp8
                                                       : inferlab::DType::bf16;
  const int element_bytes = format == inferlab::DType::bf16 ? 2 : 1;
  const int row = (kHeads + 2 * kKvHeads) * kHeadDim;
  auto qkv = filled(static_cast<size_t>(tokens) * row);
  const size_t vectors = static_cast<size_t>(tokens) * kKvHeads;
  DeviceBuffer<uint8_t> k_cache(vectors * kHeadDim * element_bytes),
      v_cache(vectors * kHeadDim * element_bytes);
  DeviceBuffer<float> k_scale(vectors), v_scale(vectors);
  std::vector<int32_t> positions(tokens), slots(tokens);
  for (int t = 0; t < tokens; ++t) positions[t] = slots[t] = t;
  DeviceBuffer<int32_t> dp(positions.size()), ds(slots.size());
  dp.upload(positions.data(), positions.size());
  ds.upload(slots.data(), slots.size());
  std::vector<float> inv(kHeadDim / 2, 1e-3f);
  DeviceBuffer<float> df(inv.size());
  df.upload(inv.data(), inv.size());
  const cuda::KvLayerCache cache{format, k_cache.data(), v_cache.data(),
                                 format == inferlab::DType::bf16 ? nullptr : k_scale.data(),
                                 format == inferlab::DType::bf16 ? nullptr : v_scale.data()};
  // Reads the row, writes q back and k, v (and their scales) to the cache.
  const double cache_bytes =
      2.0 * tokens * kKvHeads * (kHeadDim * element_bytes + (element_bytes == 1 ? 4 : 0));
  run(state, 2.0 * tokens * (row + kHeads * kHeadDim) + cache_bytes, [&] {
    cuda::rope_kv_write(qkv.data(), tokens, kHeads, kKvHeads, kHeadDim, dp.data(), ds.data(),
                        df.data(), cache, nullptr);
  });
  state.SetLabel(std::string(inferlab::dtype_name(format)) + " cache");
}

void BM_SiluMulHalves(benchmark::State& state) {
  if (!cuda_device_available()) return state.SkipWithError("no CUDA GPU");
  const int tokens = static_cast<int>(state.range(0));
  auto gate_up = filled(static_cast<size_t>(tokens) * 2 * kInter);
  auto out = filled(static_cast<size_t>(tokens) * kInter);
  run(state, 2.0 * tokens * 3 * kInter,
      [&] { cuda::silu_mul_halves(gate_up.data(), tokens, kInter, out.data(), nullptr); });
}

void BM_EmbeddingGather(benchmark::State& state) {
  if (!cuda_device_available()) return state.SkipWithError("no CUDA GPU");
  const int tokens = static_cast<int>(state.range(0));
  auto table = filled(static_cast<size_t>(kVocab) * kHidden);
  auto out = filled(static_cast<size_t>(tokens) * kHidden);
  std::vector<int32_t> ids(tokens);
  for (int t = 0; t < tokens; ++t) ids[t] = (t * 7919) % kVocab;
  DeviceBuffer<int32_t> di(ids.size());
  di.upload(ids.data(), ids.size());
  run(state, 4.0 * tokens * kHidden, [&] {
    cuda::embedding_gather(table.data(), di.data(), tokens, kHidden, out.data(), nullptr);
  });
}

}  // namespace

#define ENGINE_LAYER_BENCH(name) \
  BENCHMARK(name)->Arg(1)->Arg(64)->Arg(2048)->UseManualTime()->Unit(benchmark::kMicrosecond)
ENGINE_LAYER_BENCH(BM_RmsNorm);
ENGINE_LAYER_BENCH(BM_AddRmsNorm);
BENCHMARK(BM_RopeKvWrite)
    ->ArgNames({"tokens", "kv"})
    ->ArgsProduct({{1, 64, 2048}, {0, 1, 2}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
ENGINE_LAYER_BENCH(BM_SiluMulHalves);
ENGINE_LAYER_BENCH(BM_EmbeddingGather);

#else
static void BM_BuiltWithoutCuda(benchmark::State& state) {
  state.SkipWithError("built without CUDA");
}
BENCHMARK(BM_BuiltWithoutCuda);
#endif

BENCHMARK_MAIN();
