// Causal prefill attention at Llama 3 8B shapes (32 query heads, 8 KV heads, head_dim 128, blocks
// of 16 through a shuffled block table): the Hopper kernel (wgmma + TMA, both schedules) against
// the mma.sync kernel, for one sequence of 512, 2048 or 8192 new tokens (512: where a dispatch
// might keep the old kernel) and a 2048-token chunk after 6144 cached tokens. Reported as
// TFLOP/s: 4 · heads · head_dim FLOPs per visible query-key pair, T²/2 pairs for a T-token
// prompt. Random bf16 data; CUDA events around a graph of 10 calls per iteration. Each benchmark
// first compares its output with the mma.sync kernel's (max_abs_vs_mma: a few 1e-3 is bf16
// rounding, more is a bug). The Hopper rows skip unless the GPU is compute capability 9.0 and the
// sm_90a image loads.
#include <benchmark/benchmark.h>

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "engine/bf16.hpp"
#include "engine/cuda/attention.hpp"
#include "engine/cuda/attention_hopper.hpp"
#include "engine/cuda/attention_kernels.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda_backend.hpp"

namespace {
using namespace inferlab::engine;
using cuda::DeviceBuffer;
using cuda::detail::HopperPrefillSchedule;

constexpr int kHeads = 32;
constexpr int kKvHeads = 8;
constexpr int kHeadDim = 128;
constexpr int kBlockSize = 16;
constexpr int kLaunches = 10;

enum Kernel : int64_t { kMmaSync = 0, kHopperOverlapped = 1, kHopperSerial = 2 };

// Random bf16 in [-1, 1) (a cheap generator: the sizes reach hundreds of MB).
void fill_random(DeviceBuffer<uint16_t>& buffer, uint64_t seed) {
  std::vector<uint16_t> host(buffer.size());
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (uint16_t& v : host) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v = float_to_bf16(static_cast<float>(x >> 40) / static_cast<float>(1 << 23) - 1.0f);
  }
  buffer.upload(host.data(), host.size());
}

int device_cc() {
  int device = 0, major = 0, minor = 0;
  INFERLAB_CUDA_CHECK(cudaGetDevice(&device));
  INFERLAB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  INFERLAB_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major * 10 + minor;
}

// One sequence of `context` tokens, the last `query_len` of them new.
struct PrefillSetup {
  PrefillSetup(int context, int query_len) {
    const int blocks = (context + kBlockSize - 1) / kBlockSize;
    const size_t cache_elems = static_cast<size_t>(blocks) * kBlockSize * kKvHeads * kHeadDim;
    k = DeviceBuffer<uint16_t>(cache_elems);
    v = DeviceBuffer<uint16_t>(cache_elems);
    fill_random(k, 1);
    fill_random(v, 2);
    std::vector<int32_t> ids(static_cast<size_t>(blocks));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), std::mt19937(1));
    tables = DeviceBuffer<int32_t>(ids.size());
    tables.upload(ids.data(), ids.size());
    const std::vector<int32_t> starts = {0, query_len}, lens = {context};
    query_start = DeviceBuffer<int32_t>(2);
    query_start.upload(starts.data(), 2);
    context_lens = DeviceBuffer<int32_t>(1);
    context_lens.upload(lens.data(), 1);
    const int row = (kHeads + 2 * kKvHeads) * kHeadDim;
    q = DeviceBuffer<uint16_t>(static_cast<size_t>(query_len) * row);
    fill_random(q, 3);
    out = DeviceBuffer<uint16_t>(static_cast<size_t>(query_len) * kHeads * kHeadDim);

    p.q = reinterpret_cast<const __nv_bfloat16*>(q.data());
    p.q_row_stride = row;
    p.cache = {inferlab::DType::bf16, k.data(), v.data(), nullptr, nullptr};
    p.block_tables = tables.data();
    p.block_table_stride = blocks;
    p.query_start = query_start.data();
    p.context_lens = context_lens.data();
    p.num_seqs = 1;
    p.num_tokens = query_len;
    p.max_query_len = query_len;
    p.max_context_len = context;
    p.num_heads = kHeads;
    p.num_kv_heads = kKvHeads;
    p.head_dim = kHeadDim;
    p.block_size = kBlockSize;
    p.softmax_scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
    p.out = reinterpret_cast<__nv_bfloat16*>(out.data());
    int device = 0;
    INFERLAB_CUDA_CHECK(cudaGetDevice(&device));
    INFERLAB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    INFERLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }
  ~PrefillSetup() {
    if (graph_exec != nullptr) cudaGraphExecDestroy(graph_exec);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }

  void launch(Kernel kernel) {
    if (kernel == kMmaSync) {
      cuda::detail::launch_prefill(p, sms, stream);
    } else {
      cuda::detail::launch_prefill_hopper(p, sms, stream,
                                          kernel == kHopperOverlapped
                                              ? HopperPrefillSchedule::kOverlapped
                                              : HopperPrefillSchedule::kSerial);
    }
  }

  std::vector<float> output(Kernel kernel) {
    INFERLAB_CUDA_CHECK(cudaMemsetAsync(out.data(), 0xFF, out.bytes(), stream));
    launch(kernel);
    INFERLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<uint16_t> bits(out.size());
    out.download(bits.data(), bits.size());
    std::vector<float> values(bits.size());
    for (size_t i = 0; i < bits.size(); ++i) values[i] = bf16_to_float(bits[i]);
    return values;
  }

  // Seconds per call over a graph of kLaunches calls.
  double time_calls(Kernel kernel, cudaEvent_t start, cudaEvent_t stop) {
    if (graph_exec == nullptr) {
      cudaGraph_t graph = nullptr;
      INFERLAB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
      for (int i = 0; i < kLaunches; ++i) launch(kernel);
      INFERLAB_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
      INFERLAB_CUDA_CHECK(cudaGraphInstantiate(&graph_exec, graph, 0));
      INFERLAB_CUDA_CHECK(cudaGraphDestroy(graph));
    }
    INFERLAB_CUDA_CHECK(cudaEventRecord(start, stream));
    INFERLAB_CUDA_CHECK(cudaGraphLaunch(graph_exec, stream));
    INFERLAB_CUDA_CHECK(cudaEventRecord(stop, stream));
    INFERLAB_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    INFERLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    return ms * 1e-3 / kLaunches;
  }

  DeviceBuffer<uint16_t> q, k, v, out;
  DeviceBuffer<int32_t> tables, query_start, context_lens;
  cuda::PagedAttentionParams p;
  int sms = 0;
  cudaStream_t stream = nullptr;
  cudaGraphExec_t graph_exec = nullptr;
};

// Arguments: context, new tokens, kernel.
void BM_Prefill(benchmark::State& state) {
  if (!cuda_device_available()) return state.SkipWithError("no CUDA GPU");
  const int context = static_cast<int>(state.range(0));
  const int query_len = static_cast<int>(state.range(1));
  const auto kernel = static_cast<Kernel>(state.range(2));
  PrefillSetup setup(context, query_len);
  if (kernel != kMmaSync && !cuda::detail::hopper_prefill_supported(setup.p, device_cc())) {
    return state.SkipWithError("the Hopper kernel needs compute capability 9.0 (sm_90a image)");
  }
  state.SetLabel(kernel == kMmaSync            ? "mma.sync"
                 : kernel == kHopperOverlapped ? "hopper overlapped"
                                               : "hopper serial");
  // Once, before timing: the same function as the mma.sync kernel, every output written.
  double max_abs = 0;
  if (kernel != kMmaSync) {
    const std::vector<float> mine = setup.output(kernel), reference = setup.output(kMmaSync);
    for (size_t i = 0; i < mine.size(); ++i) {
      const double err = std::abs(double{mine[i]} - reference[i]);
      max_abs = std::isfinite(err) ? std::max(max_abs, err) : INFINITY;
    }
    cuda::detail::HopperWatchdogReport report;
    if (cuda::detail::hopper_prefill_watchdog(&report)) {
      return state.SkipWithError("the kernel's pipeline watchdog fired (a hang)");
    }
  }
  cudaEvent_t start, stop;
  INFERLAB_CUDA_CHECK(cudaEventCreate(&start));
  INFERLAB_CUDA_CHECK(cudaEventCreate(&stop));
  setup.time_calls(kernel, start, stop);  // warm-up and capture
  double total = 0;
  int64_t n = 0;
  for (auto _ : state) {
    const double seconds = setup.time_calls(kernel, start, stop);
    state.SetIterationTime(seconds);
    total += seconds;
    ++n;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  const double seconds = n > 0 ? total / static_cast<double>(n) : 0.0;
  // Query j (at position prefix + j) sees prefix + j + 1 keys: q · prefix + q² / 2 pairs.
  const double prefix = context - query_len;
  const double pairs = query_len * prefix + 0.5 * query_len * static_cast<double>(query_len);
  state.counters["TFLOP/s"] = seconds > 0 ? 4.0 * kHeads * kHeadDim * pairs / seconds * 1e-12 : 0;
  if (kernel != kMmaSync) state.counters["max_abs_vs_mma"] = max_abs;
}
BENCHMARK(BM_Prefill)
    ->ArgNames({"context", "new", "kernel"})
    ->ArgsProduct({{512}, {512}, {kMmaSync, kHopperOverlapped, kHopperSerial}})
    ->ArgsProduct({{2048}, {2048}, {kMmaSync, kHopperOverlapped, kHopperSerial}})
    ->ArgsProduct({{8192}, {8192}, {kMmaSync, kHopperOverlapped, kHopperSerial}})
    ->ArgsProduct({{8192}, {2048}, {kMmaSync, kHopperOverlapped, kHopperSerial}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
#endif  // INFERLAB_ENGINE_HAVE_CUDA

BENCHMARK_MAIN();
