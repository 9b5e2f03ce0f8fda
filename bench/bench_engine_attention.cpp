// Speed of the engine's CUDA paged attention at Llama 3 8B shapes (32 query heads, 8 KV heads,
// head_dim 128, blocks of 16), for each cache format (kv: 0 bf16, 1 int8, 2 fp8; int8/fp8 carry
// one fp32 scale per slot and KV head) and each path (naive: 0 the flash kernels, 1 the unfused
// baseline that materializes the scores):
//  - BM_Decode: one new token per sequence at batch 1/16/64 × context 1024/4096, reported as
//    the KV bytes (scales included) read per second: GB/s, bytes_per_s, and of_probe_hbm_read
//    where the probe measured this GPU. Batch 1 × 1024 is the engine's decode step: 4 MiB of bf16
//    keys and values per layer, 0.93 µs at 4.5 TB/s.
//  - BM_DecodeKernels: the chunked and the streamed decode kernel forced, batch 1-128.
//  - BM_Prefill: causal prefill of one 512- or 2048-token sequence, reported as TFLOP/s
//    (4 · heads · head_dim per visible query-key pair).
// Timed with CUDA events around a graph of 20 calls per iteration, the iteration's time being
// that of one call; 0.05 s of such time per benchmark (thousands of calls: about a second of
// wall time each, the whole program about a minute). Each call reads its own copy of
// the cache (as each layer of the engine does) when one copy is under 256 MiB, so that the calls
// read from HBM and not from the 50 MB L2 the previous call left warm. Skipped without a GPU.
#include <benchmark/benchmark.h>

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "engine/cuda/attention.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda_backend.hpp"
#include "gpu_bench_support.hpp"

namespace {
using namespace inferlab::engine;
using cuda::DeviceBuffer;
using inferlab::DType;

constexpr int kHeads = 32;
constexpr int kKvHeads = 8;
constexpr int kHeadDim = 128;
constexpr int kBlockSize = 16;
constexpr int kLaunches = 20;
constexpr size_t kRotationBytes = size_t{256} << 20;  // cache copies cycled through per graph
constexpr double kMinCallSeconds = 0.05;              // summed call time per benchmark (see above)

DType format_of(int64_t code) {
  return code == 1 ? DType::int8 : code == 2 ? DType::fp8 : DType::bf16;
}

// Sequences of `context` tokens each, `query_len` of them new, over a shuffled block pool. The
// cache holds a constant (the kernels' speed does not depend on the values; not zero): bf16
// 0x3c3c ≈ 0.0115, int8 60 and E4M3 1.5 with scales of 0.01.
struct AttentionSetup {
  AttentionSetup(int num_seqs, int context, int query_len, DType format, bool naive) {
    const int blocks_per_seq = (context + kBlockSize - 1) / kBlockSize;
    const size_t blocks = static_cast<size_t>(num_seqs) * blocks_per_seq;
    const size_t vectors = blocks * kBlockSize * kKvHeads;
    const size_t element_bytes = format == DType::bf16 ? 2 : 1;
    const size_t cache_bytes = vectors * kHeadDim * element_bytes;
    const bool quantized = format != DType::bf16;
    copies = static_cast<int>(std::clamp<size_t>(kRotationBytes / (2 * cache_bytes), 1, kLaunches));
    k = DeviceBuffer<uint8_t>(cache_bytes * copies);
    v = DeviceBuffer<uint8_t>(cache_bytes * copies);
    INFERLAB_CUDA_CHECK(cudaMemset(k.data(), 0x3c, k.bytes()));
    INFERLAB_CUDA_CHECK(cudaMemset(v.data(), 0x3c, v.bytes()));
    if (quantized) {
      const std::vector<float> scales(vectors * copies, 0.01f);
      k_scale = DeviceBuffer<float>(scales.size());
      v_scale = DeviceBuffer<float>(scales.size());
      k_scale.upload(scales.data(), scales.size());
      v_scale.upload(scales.data(), scales.size());
    }
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
    const size_t ws =
        cuda::paged_attention_workspace_bytes(tokens, kHeads, kHeadDim, context, naive);
    workspace = DeviceBuffer<unsigned char>(ws);
    kv_bytes_per_call = 2.0 * static_cast<double>(num_seqs) * context * kKvHeads *
                        (kHeadDim * static_cast<double>(element_bytes) + (quantized ? 4 : 0));

    p.q = reinterpret_cast<const __nv_bfloat16*>(q.data());
    p.q_row_stride = row;
    p.block_tables = tables.data();
    p.block_table_stride = blocks_per_seq;
    p.query_start = query_start.data();
    p.context_lens = context_lens.data();
    p.num_seqs = num_seqs;
    p.num_tokens = tokens;
    p.max_query_len = query_len;
    p.max_context_len = context;
    p.single_query_seqs = query_len == 1 ? num_seqs : 0;
    p.num_heads = kHeads;
    p.num_kv_heads = kKvHeads;
    p.head_dim = kHeadDim;
    p.block_size = kBlockSize;
    p.softmax_scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
    p.out = reinterpret_cast<__nv_bfloat16*>(out.data());
    p.naive = naive;
    // INFERLAB_ENGINE_DECODE_SPLITS and the other attention switches, as the engine takes them.
    cuda::apply_attention_tuning(engine_tuning_from_environment().attention, &p);
    p.workspace = workspace.data();
    p.workspace_bytes = ws;
    cache_for = [=, this](int copy) {
      cuda::KvLayerCache cache;
      cache.format = format;
      cache.k = k.data() + cache_bytes * copy;
      cache.v = v.data() + cache_bytes * copy;
      if (quantized) {
        cache.k_scale = k_scale.data() + vectors * copy;
        cache.v_scale = v_scale.data() + vectors * copy;
      }
      return cache;
    };
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
      for (int i = 0; i < kLaunches; ++i) {
        p.cache = cache_for(i % copies);
        cuda::paged_attention(p, stream);
      }
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

  DeviceBuffer<uint16_t> q, out;
  DeviceBuffer<uint8_t> k, v;
  DeviceBuffer<float> k_scale, v_scale;
  DeviceBuffer<int32_t> tables, query_start, context_lens;
  DeviceBuffer<unsigned char> workspace;
  std::function<cuda::KvLayerCache(int)> cache_for;
  int copies = 1;
  double kv_bytes_per_call = 0;
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

std::string label_of(DType format, bool naive) {
  return std::string(inferlab::dtype_name(format)) + (naive ? " naive" : " flash");
}

// Times a decode setup and reports its KV bytes read per second.
void time_decode(benchmark::State& state, AttentionSetup& setup, const std::string& label) {
  const double seconds = run(state, setup);
  state.counters["GB/s"] = seconds > 0 ? setup.kv_bytes_per_call / seconds * 1e-9 : 0.0;
  inferlab::bench::set_bandwidth_counters(state, setup.kv_bytes_per_call);
  state.SetLabel(label);
}

// A decode benchmark's shape from its arguments (batch, context, kv format, then its own).
struct DecodeShape {
  int batch, context;
  DType format;
};
DecodeShape decode_shape_of(const benchmark::State& state) {
  return {static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
          format_of(state.range(2))};
}

void BM_Decode(benchmark::State& state) {
  if (!cuda_device_available()) {
    state.SkipWithError("no CUDA GPU");
    return;
  }
  const DecodeShape s = decode_shape_of(state);
  const bool naive = state.range(3) != 0;
  AttentionSetup setup(s.batch, s.context, 1, s.format, naive);
  time_decode(state, setup, label_of(s.format, naive));
}
BENCHMARK(BM_Decode)
    ->ArgNames({"batch", "context", "kv", "naive"})
    ->ArgsProduct({{1, 16, 64}, {1024, 4096}, {0, 1, 2}, {0, 1}})
    ->MinTime(kMinCallSeconds)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// The two decode kernels forced (kernel: 1 chunked, 2 streamed), whatever BM_Decode's automatic
// choice would be (the streamed one for bf16 caches); run with INFERLAB_ENGINE_DECODE_SPLITS=N to
// set the split count as well.
void BM_DecodeKernels(benchmark::State& state) {
  if (!cuda_device_available()) {
    state.SkipWithError("no CUDA GPU");
    return;
  }
  const DecodeShape s = decode_shape_of(state);
  const bool chunked = state.range(3) == 1;
  AttentionSetup setup(s.batch, s.context, 1, s.format, false);
  setup.p.decode_kernel = chunked ? cuda::DecodeKernel::chunked : cuda::DecodeKernel::streamed;
  time_decode(state, setup,
              std::string(inferlab::dtype_name(s.format)) + (chunked ? " chunked" : " streamed"));
}
BENCHMARK(BM_DecodeKernels)
    ->ArgNames({"batch", "context", "kv", "kernel"})
    ->ArgsProduct({{1, 2, 4, 8, 16, 32, 64, 128}, {1024, 4096}, {0, 2}, {1, 2}})
    ->MinTime(kMinCallSeconds)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void BM_Prefill(benchmark::State& state) {
  if (!cuda_device_available()) {
    state.SkipWithError("no CUDA GPU");
    return;
  }
  const int tokens = static_cast<int>(state.range(0));
  const DType format = format_of(state.range(1));
  const bool naive = state.range(2) != 0;
  AttentionSetup setup(1, tokens, tokens, format, naive);
  const double seconds = run(state, setup);
  // Causal: token j sees j + 1 keys; Q·Kᵀ and P·V take 2 · head_dim FLOPs per pair each.
  const double pairs = 0.5 * tokens * (tokens + 1.0);
  const double flops = 4.0 * kHeads * kHeadDim * pairs;
  state.counters["TFLOP/s"] = seconds > 0 ? flops / seconds * 1e-12 : 0.0;
  state.SetLabel(label_of(format, naive));
}
BENCHMARK(BM_Prefill)
    ->ArgNames({"tokens", "kv", "naive"})
    ->ArgsProduct({{512, 2048}, {0, 1, 2}, {0, 1}})
    ->MinTime(kMinCallSeconds)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
#endif  // INFERLAB_ENGINE_HAVE_CUDA

BENCHMARK_MAIN();
