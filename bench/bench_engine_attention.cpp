// Speed of the engine's CUDA paged attention at Llama 3 8B shapes (32 query heads, 8 KV heads,
// head_dim 128, blocks of 16): split-K decode at batch 1/16/64 × context 1024/4096, reported as
// KV bytes read per second, and causal prefill of one 512- or 2048-token sequence, reported as
// TFLOP/s (4 · heads · head_dim per visible query-key pair). Timed with CUDA events around a
// graph of 20 calls per iteration; skipped without a GPU.
#include <benchmark/benchmark.h>

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "engine/cuda/attention.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda_backend.hpp"

namespace {
using namespace inferlab::engine;
using cuda::DeviceBuffer;

constexpr int kHeads = 32;
constexpr int kKvHeads = 8;
constexpr int kHeadDim = 128;
constexpr int kBlockSize = 16;
constexpr int kLaunches = 20;

// Sequences of `context` tokens each, `query_len` of them new, over a shuffled block pool. The
// cache holds a constant (the kernels' speed does not depend on the values).
struct AttentionSetup {
  AttentionSetup(int num_seqs, int context, int query_len) {
    const int blocks_per_seq = (context + kBlockSize - 1) / kBlockSize;
    const size_t blocks = static_cast<size_t>(num_seqs) * blocks_per_seq;
    const size_t cache_elems = blocks * kBlockSize * kKvHeads * kHeadDim;
    k = DeviceBuffer<uint16_t>(cache_elems);
    v = DeviceBuffer<uint16_t>(cache_elems);
    INFERLAB_CUDA_CHECK(cudaMemset(k.data(), 0x3c, k.bytes()));
    INFERLAB_CUDA_CHECK(cudaMemset(v.data(), 0x3c, v.bytes()));
    std::vector<int32_t> ids(blocks);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), std::mt19937(1));
    tables = DeviceBuffer<int32_t>(ids.size());
    tables.upload(ids.data(), ids.size());
    std::vector<int32_t> starts(static_cast<size_t>(num_seqs) + 1), lens(num_seqs, context);
    for (int s = 0; s <= num_seqs; ++s) starts[static_cast<size_t>(s)] = s * query_len;
    query_start = DeviceBuffer<int32_t>(starts.size());
    query_start.upload(starts.data(), starts.size());
    context_lens = DeviceBuffer<int32_t>(lens.size());
    context_lens.upload(lens.data(), lens.size());
    const int tokens = num_seqs * query_len;
    const int row = (kHeads + 2 * kKvHeads) * kHeadDim;
    q = DeviceBuffer<uint16_t>(static_cast<size_t>(tokens) * row);
    INFERLAB_CUDA_CHECK(cudaMemset(q.data(), 0x3c, q.bytes()));
    out = DeviceBuffer<uint16_t>(static_cast<size_t>(tokens) * kHeads * kHeadDim);
    const size_t ws = cuda::paged_attention_workspace_bytes(tokens, kHeads, kHeadDim, context);
    workspace = DeviceBuffer<unsigned char>(ws);

    p.q = reinterpret_cast<const __nv_bfloat16*>(q.data());
    p.q_row_stride = row;
    p.cache = {inferlab::DType::bf16, k.data(), v.data(), nullptr, nullptr};
    p.block_tables = tables.data();
    p.block_table_stride = blocks_per_seq;
    p.query_start = query_start.data();
    p.context_lens = context_lens.data();
    p.num_seqs = num_seqs;
    p.num_tokens = tokens;
    p.max_query_len = query_len;
    p.max_context_len = context;
    p.num_heads = kHeads;
    p.num_kv_heads = kKvHeads;
    p.head_dim = kHeadDim;
    p.block_size = kBlockSize;
    p.softmax_scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
    p.out = reinterpret_cast<__nv_bfloat16*>(out.data());
    p.workspace = workspace.data();
    p.workspace_bytes = ws;
  }

  ~AttentionSetup() {
    if (graph_exec != nullptr) cudaGraphExecDestroy(graph_exec);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }

  // Seconds per call, averaged over kLaunches calls replayed from one CUDA graph (the engine's
  // decode path; host launch overhead would otherwise hide the short kernels). The capture also
  // checks that the call is graph-capturable.
  double time_call(cudaEvent_t start, cudaEvent_t stop) {
    if (graph_exec == nullptr) {
      INFERLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      cudaGraph_t graph = nullptr;
      INFERLAB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
      for (int i = 0; i < kLaunches; ++i) cuda::paged_attention(p, stream);
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
  DeviceBuffer<unsigned char> workspace;
  cuda::PagedAttentionParams p;
  cudaStream_t stream = nullptr;
  cudaGraphExec_t graph_exec = nullptr;
};

// Runs the timing loop; returns the mean seconds per call (0 when skipped).
double run(benchmark::State& state, AttentionSetup& setup) {
  cudaEvent_t start, stop;
  INFERLAB_CUDA_CHECK(cudaEventCreate(&start));
  INFERLAB_CUDA_CHECK(cudaEventCreate(&stop));
  setup.time_call(start, stop);  // warm-up
  double total = 0;
  int64_t n = 0;
  for (auto _ : state) {
    const double seconds = setup.time_call(start, stop);
    state.SetIterationTime(seconds);
    total += seconds;
    ++n;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return n > 0 ? total / static_cast<double>(n) : 0.0;
}

void BM_Decode(benchmark::State& state) {
  if (!cuda_device_available()) {
    state.SkipWithError("no CUDA GPU");
    return;
  }
  const int batch = static_cast<int>(state.range(0));
  const int context = static_cast<int>(state.range(1));
  AttentionSetup setup(batch, context, 1);
  const double seconds = run(state, setup);
  const double kv_bytes = 2.0 * batch * context * kKvHeads * kHeadDim * sizeof(uint16_t);
  state.counters["GB/s"] = seconds > 0 ? kv_bytes / seconds * 1e-9 : 0.0;
}
BENCHMARK(BM_Decode)
    ->ArgNames({"batch", "context"})
    ->ArgsProduct({{1, 16, 64}, {1024, 4096}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void BM_Prefill(benchmark::State& state) {
  if (!cuda_device_available()) {
    state.SkipWithError("no CUDA GPU");
    return;
  }
  const int tokens = static_cast<int>(state.range(0));
  AttentionSetup setup(1, tokens, tokens);
  const double seconds = run(state, setup);
  // Causal: token j sees j + 1 keys; Q·Kᵀ and P·V take 2 · head_dim FLOPs per pair each.
  const double pairs = 0.5 * tokens * (tokens + 1.0);
  const double flops = 4.0 * kHeads * kHeadDim * pairs;
  state.counters["TFLOP/s"] = seconds > 0 ? flops / seconds * 1e-12 : 0.0;
}
BENCHMARK(BM_Prefill)
    ->ArgName("tokens")
    ->Arg(512)
    ->Arg(2048)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
#endif  // INFERLAB_ENGINE_HAVE_CUDA

BENCHMARK_MAIN();
