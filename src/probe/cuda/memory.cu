#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "probe/cuda/cuda_util.cuh"
#include "probe/cuda/memory.cuh"

namespace inferlab::probe {

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ uint32_t fold(uint4 v) {
  return v.x ^ v.y ^ v.z ^ v.w;
}
// Order-dependent mix: unlike a plain XOR, repeated passes over the same data do not cancel.
__device__ __forceinline__ uint32_t mix(uint32_t acc, uint32_t v) {
  return ((acc << 1) | (acc >> 31)) ^ v;
}

// Blocks walk tiles of kUnroll x blockDim contiguous uint4 (grid-stride over tiles); each
// thread keeps kUnroll independent 16-byte accesses in flight, and a warp's accesses stay in
// one DRAM row region, as PyTorch's elementwise kernels do.
constexpr int kUnroll = 4;

__device__ __forceinline__ size_t tile_index(size_t tile, int u) {
  return tile * kUnroll * blockDim.x + u * blockDim.x + threadIdx.x;
}

// Streams `n` uint4 `passes` times; each block mixes what it read into sink so the loads cannot
// be removed and the result can be checked.
__global__ void read_kernel(const uint4* __restrict__ in, size_t n, int passes, uint32_t* sink) {
  uint32_t acc = 0;
  const size_t tiles = (n + size_t(kUnroll) * blockDim.x - 1) / (size_t(kUnroll) * blockDim.x);
  for (int p = 0; p < passes; ++p) {
    for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      uint4 v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        size_t idx = tile_index(tile, u);
        v[u] = idx < n ? in[idx] : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) acc = mix(acc, fold(v[u]) + p);
    }
  }
  atomicAdd(sink, acc | 1u);
}

__global__ void write_kernel(uint4* out, size_t n, int passes, uint32_t value) {
  const size_t tiles = (n + size_t(kUnroll) * blockDim.x - 1) / (size_t(kUnroll) * blockDim.x);
  for (int p = 0; p < passes; ++p) {
    for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        size_t idx = tile_index(tile, u);
        if (idx < n)
          out[idx] = make_uint4(value, static_cast<uint32_t>(idx), p, value ^ 0x5a5a5a5aU);
      }
    }
  }
}

__global__ void copy_kernel(const uint4* __restrict__ in, uint4* out, size_t n, int passes) {
  const size_t tiles = (n + size_t(kUnroll) * blockDim.x - 1) / (size_t(kUnroll) * blockDim.x);
  for (int p = 0; p < passes; ++p) {
    for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      uint4 v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        size_t idx = tile_index(tile, u);
        if (idx < n) v[u] = in[idx];
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        size_t idx = tile_index(tile, u);
        if (idx < n) out[idx] = v[u];
      }
    }
  }
}

// Every block reads the same `n` uint4 (L1-resident when small), `passes` times.
__global__ void shared_region_read_kernel(const uint4* __restrict__ in, size_t n, int passes,
                                          uint32_t* sink) {
  uint32_t acc = 0;
  for (int p = 0; p < passes; ++p) {
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) acc = mix(acc, fold(__ldg(in + i)) + p);
  }
  atomicAdd(sink, acc | 1u);
}

// Shared-memory bandwidth: 32 KB per block read (or written) `passes` times, 16 bytes a load.
constexpr int kSmemWords = 32 * 1024 / 16;
__global__ void smem_kernel(int mode, int passes, uint32_t* sink) {
  __shared__ uint4 tile[kSmemWords];
  for (int i = threadIdx.x; i < kSmemWords; i += blockDim.x) {
    tile[i] = make_uint4(i, i * 3, i * 7, blockIdx.x);
  }
  __syncthreads();
  uint32_t acc = 0;
  for (int p = 0; p < passes; ++p) {
    for (int i = threadIdx.x; i < kSmemWords; i += blockDim.x) {
      if (mode == 0) {
        acc = mix(acc, fold(tile[i]) + p);
      } else if (mode == 1) {
        tile[i] = make_uint4(p, i, acc, p ^ i);
      } else {
        tile[i] = tile[(i + 32) % kSmemWords];
      }
    }
    if (mode != 0) __syncthreads();
  }
  if (mode != 0) acc ^= fold(tile[threadIdx.x]);
  atomicAdd(sink, acc | 1u);
}

// Read:write mix: out of every 4 accesses, `reads` read `src` and the rest write `dst`.
__global__ void mix_kernel(const uint4* __restrict__ src, uint4* dst, size_t n, int reads,
                           uint32_t* sink) {
  uint32_t acc = 0;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += stride * 4) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      size_t idx = i + j * stride;
      if (idx >= n) break;
      if (j < reads) {
        acc = mix(acc, fold(__ldg(src + idx)));
      } else {
        dst[idx] = make_uint4(acc, static_cast<uint32_t>(idx), j, 7);
      }
    }
  }
  atomicAdd(sink, acc | 1u);
}

// Gathers n elements of width W: element i reads position perm(i), where perm is sequential,
// a stride-s transpose (bijective: consecutive threads land s elements apart), or a hash.
template <typename W>
__global__ void pattern_kernel(const W* __restrict__ in, size_t n, size_t stride, int random,
                               uint32_t* sink) {
  uint32_t acc = 0;
  const size_t rows = n / stride;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    size_t idx;
    if (random) {
      uint64_t h = i * 0x9e3779b97f4a7c15ULL;
      h ^= h >> 29;
      h *= 0xbf58476d1ce4e5b9ULL;
      idx = (h ^ (h >> 32)) % n;
    } else {
      idx = (i % rows) * stride + i / rows;
    }
    W v = __ldg(in + idx);
    acc = mix(acc, reinterpret_cast<const uint32_t*>(&v)[0]);
  }
  atomicAdd(sink, acc | 1u);
}

// One thread follows `next` for `steps` loads; cycles and nanoseconds per load.
__global__ void chase_kernel(const uint32_t* __restrict__ next, uint32_t start, int steps,
                             uint32_t* sink, long long* cycles) {
  uint32_t p = start;
  long long c0 = clock64();
  for (int i = 0; i < steps; ++i) p = next[p];
  long long c1 = clock64();
  sink[0] = p;
  cycles[0] = c1 - c0;
}

int blocks_for(int sm_count) {
  return sm_count * 8;
}

uint32_t read_sink(DeviceBuffer& sink) {
  uint32_t v = 0;
  PROBE_CHECK(cudaMemcpy(&v, sink.as<uint32_t>(), 4, cudaMemcpyDeviceToHost));
  return v;
}

void zero(DeviceBuffer& b) {
  PROBE_CHECK(cudaMemset(b.as<void>(), 0, b.bytes()));
}

nlohmann::json bandwidth_entry(const SampleStats& t, double bytes, const char* method) {
  SampleStats r = rate_stats(t, bytes);
  return {{"bytes_per_s", r.median}, {"rate_min", r.min},        {"rate_max", r.max},
          {"bytes_per_run", bytes},  {"time", stats_to_json(t)}, {"method", method}};
}

// Read, write and copy bandwidth over a buffer of `bytes`, repeated `passes` times per run.
// Times `launch(blocks)` with a persistent grid (8 blocks per SM) and with one block per tile,
// and keeps the faster; records which.
struct GridChoice {
  SampleStats time;
  const char* grid;
};
GridChoice best_grid(const std::function<void(int)>& launch, int persistent_blocks, size_t n,
                     const TimingPlan& plan) {
  int tile_blocks = static_cast<int>(
      std::min<size_t>((n + kUnroll * kThreads - 1) / (kUnroll * kThreads), 1u << 30));
  auto persistent = time_runs([&] { launch(persistent_blocks); }, plan);
  auto per_tile = time_runs([&] { launch(tile_blocks); }, plan);
  if (per_tile.median < persistent.median) return {per_tile, "one block per tile"};
  return {persistent, "persistent, 8 blocks per SM"};
}

// Read, write and copy bandwidth over a buffer of `bytes`, repeated `passes` times per run.
nlohmann::json level_bandwidth(size_t bytes, int passes, int blocks, bool quick,
                               const char* level) {
  DeviceBuffer a(bytes), b(bytes), sink(4);
  fill_random_bytes(a, 11);
  const size_t n = bytes / 16;
  TimingPlan plan{2, quick ? 5 : 15, nullptr};
  zero(sink);
  auto read = best_grid(
      [&](int g) { read_kernel<<<g, kThreads>>>(a.as<uint4>(), n, passes, sink.as<uint32_t>()); },
      blocks, n, plan);
  auto write = best_grid([&](int g) { write_kernel<<<g, kThreads>>>(b.as<uint4>(), n, passes, 3); },
                         blocks, n, plan);
  auto copy = best_grid(
      [&](int g) { copy_kernel<<<g, kThreads>>>(a.as<uint4>(), b.as<uint4>(), n, passes); }, blocks,
      n, plan);
  // The copy must reproduce the source exactly.
  std::vector<uint4> head(1024), src(1024);
  PROBE_CHECK(cudaMemcpy(head.data(), b.as<uint4>() + n / 2, 16 * 1024, cudaMemcpyDeviceToHost));
  PROBE_CHECK(cudaMemcpy(src.data(), a.as<uint4>() + n / 2, 16 * 1024, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 1024; ++i) {
    if (head[i].x != src[i].x || head[i].w != src[i].w) {
      throw std::runtime_error(std::string(level) + " copy kernel produced wrong data");
    }
  }
  if (read_sink(sink) == 0) throw std::runtime_error(std::string(level) + " read sink is zero");
  double moved = static_cast<double>(bytes) * passes;
  auto entry = [&](const GridChoice& c, double work, const char* method) {
    nlohmann::json e = bandwidth_entry(c.time, work, method);
    e["grid"] = c.grid;
    return e;
  };
  return {{"read", entry(read, moved, "uint4 tiles, 4 loads in flight per thread")},
          {"write", entry(write, moved, "uint4 tiles, 4 stores per thread")},
          {"copy", entry(copy, 2 * moved, "uint4 copy, bytes read + written")},
          {"read_bps", rate_stats(read.time, moved).median},
          {"write_bps", rate_stats(write.time, moved).median},
          {"copy_bps", rate_stats(copy.time, 2 * moved).median},
          {"working_set_bytes", bytes}};
}

struct ChaseResult {
  double ns_per_load, cycles_per_load;
};

// warm: run the whole chain once first, so a set that fits a cache level is timed from there.
ChaseResult pointer_chase(size_t bytes, int steps, bool warm) {
  const size_t line = 128;  // one pointer per cache line, visited in random order
  const size_t lines = std::max<size_t>(2, bytes / line);
  const size_t words = lines * line / 4;
  std::vector<uint32_t> order(lines);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin() + 1, order.end(), std::mt19937(7));
  std::vector<uint32_t> next(words, 0);
  for (size_t i = 0; i < lines; ++i) {
    next[order[i] * (line / 4)] = order[(i + 1) % lines] * (line / 4);
  }
  DeviceBuffer d_next(words * 4), sink(4), cycles(8);
  PROBE_CHECK(cudaMemcpy(d_next.as<uint32_t>(), next.data(), words * 4, cudaMemcpyHostToDevice));
  // A set larger than L2 is never warmed: the warm lap would leave the lines the timed chase
  // visits in L2, and an HBM chase would time L2.
  if (warm) {
    chase_kernel<<<1, 1>>>(d_next.as<uint32_t>(), 0, static_cast<int>(lines), sink.as<uint32_t>(),
                           cycles.as<long long>());
  }
  // Each timed run starts `steps` further along the chain, so a long chain's runs touch
  // disjoint lines and none finds the previous run's lines in cache.
  size_t run = 0;
  auto t = time_runs(
      [&] {
        uint32_t start = order[(run++ * steps) % lines] * (line / 4);
        chase_kernel<<<1, 1>>>(d_next.as<uint32_t>(), start, steps, sink.as<uint32_t>(),
                               cycles.as<long long>());
      },
      {0, 3, nullptr});
  long long c = 0;
  PROBE_CHECK(cudaMemcpy(&c, cycles.as<long long>(), 8, cudaMemcpyDeviceToHost));
  uint32_t end = read_sink(sink);
  if (end % (line / 4) != 0) throw std::runtime_error("pointer chase left the chain");
  return {t.median / steps * 1e9, static_cast<double>(c) / steps};
}

}  // namespace

nlohmann::json measure_memory_levels(const MemoryPlan& p) {
  const int blocks = blocks_for(p.sm_count);
  nlohmann::json out;
  // HBM: far beyond L2, one pass per run.
  out["hbm"] = level_bandwidth(p.hbm_test_bytes, 1, blocks, p.quick, "hbm");
  // L2: a third of the L2, many passes per run (all blocks stream the whole set).
  size_t l2_set = (p.l2_bytes / 3) & ~size_t(4095);
  out["l2"] = level_bandwidth(l2_set, p.quick ? 10 : 40, blocks, p.quick, "l2");
  // Shared memory.
  {
    DeviceBuffer sink(4);
    zero(sink);
    const int passes = p.quick ? 200 : 1000;
    double bytes = static_cast<double>(blocks) * kSmemWords * 16.0 * passes;
    TimingPlan plan{2, p.quick ? 5 : 15, nullptr};
    nlohmann::json shared;
    const char* names[] = {"read", "write", "copy"};
    for (int mode = 0; mode < 3; ++mode) {
      auto t = time_runs(
          [&] { smem_kernel<<<blocks, kThreads>>>(mode, passes, sink.as<uint32_t>()); }, plan);
      double moved = mode == 2 ? 2 * bytes : bytes;
      shared[names[mode]] =
          bandwidth_entry(t, moved, "16-byte shared-memory accesses, 32 KB per block");
      shared[std::string(names[mode]) + "_bps"] = rate_stats(t, moved).median;
    }
    out["shared"] = shared;
  }
  // Latency per level: pointer chase in a set that fits the level.
  const int steps = p.quick ? 20000 : 100000;
  auto chase = [&](size_t bytes) {
    ChaseResult r = pointer_chase(bytes, steps, bytes < p.l2_bytes / 2);
    return nlohmann::json{{"latency_ns", r.ns_per_load},
                          {"latency_cycles", r.cycles_per_load},
                          {"chase_bytes", bytes}};
  };
  auto shared_chase = chase(16 * 1024);  // L1-resident: the on-SM level
  out["shared"]["latency_ns"] = shared_chase["latency_ns"];
  out["shared"]["latency_cycles"] = shared_chase["latency_cycles"];
  out["shared"]["latency_note"] = "L1 hit latency (16 KB global pointer chase), the SM-local level";
  auto l2_chase = chase(p.l2_bytes / 4);
  out["l2"]["latency_ns"] = l2_chase["latency_ns"];
  out["l2"]["latency_cycles"] = l2_chase["latency_cycles"];
  auto hbm_chase = chase(size_t(1) << 30);
  out["hbm"]["latency_ns"] = hbm_chase["latency_ns"];
  out["hbm"]["latency_cycles"] = hbm_chase["latency_cycles"];

  // DRAM behaviour: read:write mixes and access patterns.
  {
    const size_t bytes = p.hbm_test_bytes / 2;
    DeviceBuffer src(bytes), dst(bytes), sink(4);
    fill_random_bytes(src, 5);
    zero(sink);
    nlohmann::json mixes = nlohmann::json::array();
    const int ratios[][2] = {{4, 0}, {3, 1}, {2, 2}, {1, 3}, {0, 4}};
    const char* labels[] = {"1:0", "3:1", "1:1", "1:3", "0:1"};
    for (int r = 0; r < 5; ++r) {
      auto t = time_runs(
          [&] {
            mix_kernel<<<blocks, kThreads>>>(src.as<uint4>(), dst.as<uint4>(), bytes / 16,
                                             ratios[r][0], sink.as<uint32_t>());
          },
          {2, p.quick ? 5 : 15, nullptr});
      nlohmann::json e = bandwidth_entry(t, static_cast<double>(bytes),
                                         "uint4 accesses, reads and writes to separate buffers");
      e["read_write"] = labels[r];
      mixes.push_back(e);
    }
    out["hbm"]["read_write_mix"] = mixes;

    nlohmann::json patterns = nlohmann::json::array();
    const size_t strides[] = {1, 2, 4, 8, 16, 32, 0};  // 0: random gather
    for (int width : {4, 8, 16}) {
      const size_t n = bytes / width;
      for (size_t stride : strides) {
        if (p.quick && (stride == 2 || stride == 8 || stride == 32)) continue;
        auto launch = [&] {
          size_t s = stride == 0 ? 1 : stride;
          int random = stride == 0;
          if (width == 4)
            pattern_kernel<uint32_t>
                <<<blocks, kThreads>>>(src.as<uint32_t>(), n, s, random, sink.as<uint32_t>());
          if (width == 8)
            pattern_kernel<uint2>
                <<<blocks, kThreads>>>(src.as<uint2>(), n, s, random, sink.as<uint32_t>());
          if (width == 16)
            pattern_kernel<uint4>
                <<<blocks, kThreads>>>(src.as<uint4>(), n, s, random, sink.as<uint32_t>());
        };
        auto t = time_runs(launch, {1, p.quick ? 3 : 7, nullptr});
        nlohmann::json e = bandwidth_entry(t, static_cast<double>(n) * width,
                                           "useful bytes (elements read x width)");
        e["pattern"] = stride == 0 ? "random" : (stride == 1 ? "sequential" : "strided");
        e["stride_elements"] = stride;
        e["width_bytes"] = width;
        patterns.push_back(e);
      }
    }
    out["hbm"]["access_patterns"] = patterns;
    if (read_sink(sink) == 0) throw std::runtime_error("access-pattern sink is zero");
  }
  return out;
}

nlohmann::json measure_working_set_sweep(const MemoryPlan& p) {
  const int blocks = blocks_for(p.sm_count);
  nlohmann::json bandwidth = nlohmann::json::array(), latency = nlohmann::json::array();
  DeviceBuffer big(p.hbm_test_bytes), sink(4);
  fill_random_bytes(big, 9);
  zero(sink);
  const size_t shared_limit = p.l2_bytes / 2;
  for (size_t ws = 16 * 1024; ws <= p.hbm_test_bytes; ws *= 2) {
    const size_t n = ws / 16;
    double bytes_per_run;
    std::function<void()> launch;
    if (ws <= shared_limit) {
      // Every block reads the whole set: L1 hits while it fits in L1, L2 hits after.
      int passes = static_cast<int>(std::max<size_t>(1, (64u << 20) / ws / 8));
      if (p.quick) passes = std::max(1, passes / 4);
      bytes_per_run = static_cast<double>(ws) * passes * blocks;
      launch = [&, n, passes] {
        shared_region_read_kernel<<<blocks, kThreads>>>(big.as<uint4>(), n, passes,
                                                        sink.as<uint32_t>());
      };
    } else {
      // The set is split across blocks: L2 while it fits, HBM beyond.
      int passes = static_cast<int>(std::max<size_t>(1, (size_t(2) << 30) / ws));
      if (p.quick) passes = std::max(1, passes / 4);
      bytes_per_run = static_cast<double>(ws) * passes;
      launch = [&, n, passes] {
        read_kernel<<<blocks, kThreads>>>(big.as<uint4>(), n, passes, sink.as<uint32_t>());
      };
    }
    auto t = time_runs(launch, {1, p.quick ? 3 : 7, nullptr});
    nlohmann::json e = bandwidth_entry(
        t, bytes_per_run,
        ws <= shared_limit ? "all blocks read the same set" : "set split across blocks");
    e["working_set_bytes"] = ws;
    bandwidth.push_back(e);
  }
  const int steps = p.quick ? 10000 : 40000;
  for (size_t ws = 4 * 1024; ws <= (size_t(1) << 30); ws *= (p.quick ? 8 : 4)) {
    ChaseResult r = pointer_chase(ws, steps, ws < p.l2_bytes / 2);
    latency.push_back({{"working_set_bytes", ws},
                       {"latency_ns", r.ns_per_load},
                       {"latency_cycles", r.cycles_per_load}});
  }
  return {{"read_bandwidth", bandwidth}, {"latency", latency}};
}

}  // namespace inferlab::probe
