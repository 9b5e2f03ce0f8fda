// Speed of the Projector (engine/cuda/projection.hpp) per weight format and path at Llama 3 8B
// and Llama 3.2 1B shapes, 1-64 rows: the GEMV kernels, the tensor-core path (cuBLASLt, after
// dequantization or input quantization), and the GEMV's fused forms (RMSNorm prologue for
// QKV and gate/up with SwiGLU, residual add for O and down). Reported: time per call, bytes/s
// (weights as stored plus activations read and written) and its share of the probe's HBM read
// bandwidth, and FLOP/s. Each launch reads another copy of the weights (≥ 128 MB in all, past
// the 50 MB L2); CUDA events around 20 launches. Names: projection/<format>/<shape>/<path>/
// rows:<n> with path gemv, lt (tensor cores) or fused, so --benchmark_filter picks a slice.
// Skipped without a GPU.
#include <benchmark/benchmark.h>

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/projection.hpp"
#include "engine/cuda_backend.hpp"
#include "gpu_bench_support.hpp"

namespace {
using namespace inferlab;
using namespace inferlab::engine;
using bf16 = __nv_bfloat16;
using cuda::DeviceBuffer;
using cuda::DeviceMatrix;
using cuda::Projector;

constexpr int kLaunches = 20;
constexpr double kMinWeightBytes = 128e6;
constexpr int64_t kGroupSize = 128;

struct Format {
  const char* name;
  DType weights, input;
};
const std::vector<Format> kFormats = {{"bf16", DType::bf16, DType::bf16},
                                      {"int8", DType::int8, DType::bf16},
                                      {"int4", DType::int4, DType::bf16},
                                      {"fp8", DType::fp8, DType::fp8},
                                      {"w8a8", DType::int8, DType::int8}};

enum class Role { qkv, o, gate_up, down, lm_head };
struct Shape {
  const char* name;
  int64_t in, out;
  Role role;
};
const std::vector<Shape> kShapes = {{"8b_qkv", 4096, 6144, Role::qkv},
                                    {"8b_o", 4096, 4096, Role::o},
                                    {"8b_gate_up", 4096, 28672, Role::gate_up},
                                    {"8b_down", 14336, 4096, Role::down},
                                    {"8b_lm_head", 4096, 128256, Role::lm_head},
                                    {"1b_qkv", 2048, 3072, Role::qkv},
                                    {"1b_o", 2048, 2048, Role::o},
                                    {"1b_gate_up", 2048, 16384, Role::gate_up},
                                    {"1b_down", 8192, 2048, Role::down},
                                    {"1b_lm_head", 2048, 128256, Role::lm_head}};

uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Random weights in a format's device layout (never zeros; no E4M3 NaN codes), in enough
// copies that rotating through them defeats the L2. Built once per (format, shape).
struct Weights {
  int copies = 0;
  double bytes = 0;  // one copy, as stored: data, scales, zeros
  DeviceBuffer<unsigned char> data;
  DeviceBuffer<float> scales;
  DeviceBuffer<__half> group_scales;
  DeviceBuffer<uint8_t> zeros;
  DeviceMatrix matrix(const Format& f, const Shape& s, int copy) const {
    DeviceMatrix m;
    m.format = f.weights;
    m.input_format = f.input;
    m.out = s.out;
    m.in = s.in;
    const int64_t data_bytes = f.weights == DType::bf16   ? s.out * s.in * 2
                               : f.weights == DType::int4 ? s.out * s.in / 2
                                                          : s.out * s.in;
    m.data = data.data() + copy * data_bytes;
    m.scales = scales.size() > 0 ? scales.data() + copy * s.out : nullptr;
    const int64_t groups = s.out * (s.in / kGroupSize);
    m.group_scales = group_scales.size() > 0 ? group_scales.data() + copy * groups : nullptr;
    m.zeros = zeros.size() > 0 ? zeros.data() + copy * groups : nullptr;
    m.group_size = f.weights == DType::int4 ? kGroupSize : 0;
    return m;
  }
};

template <class T>
void fill_copies(DeviceBuffer<T>& buffer, const std::vector<T>& one, int copies) {
  buffer = DeviceBuffer<T>(one.size() * copies);
  for (int c = 0; c < copies; ++c) buffer.upload(one.data(), one.size(), c * one.size());
}

const Weights& weights_for(const Format& f, const Shape& s) {
  static std::map<std::pair<std::string, std::string>, std::unique_ptr<Weights>> cache;
  auto& slot = cache[{f.name, s.name}];
  if (slot) return *slot;
  slot = std::make_unique<Weights>();
  Weights& w = *slot;
  uint64_t state = std::hash<std::string>{}(std::string(f.name) + s.name);
  const int64_t n = s.out * s.in;
  std::vector<unsigned char> data;
  if (f.weights == DType::bf16) {
    data.resize(n * 2);
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t bits = 0x3c00 | (splitmix(state) & 0x80ff);  // ±[2^-7, 2^-6)
      data[2 * i] = bits & 0xff;
      data[2 * i + 1] = bits >> 8;
    }
  } else {
    data.resize(f.weights == DType::int4 ? n / 2 : n);
    for (auto& byte : data) {
      byte = static_cast<unsigned char>(splitmix(state));
      if (f.weights == DType::fp8 && (byte & 0x7f) == 0x7f) byte ^= 1;  // not NaN
    }
  }
  const int64_t groups = s.out * (s.in / kGroupSize);
  w.bytes = static_cast<double>(data.size()) + (f.weights == DType::int4   ? groups * 3.0
                                                : f.weights == DType::bf16 ? 0.0
                                                                           : s.out * 4.0);
  w.copies = static_cast<int>(kMinWeightBytes / w.bytes) + 1;
  fill_copies(w.data, data, w.copies);
  if (f.weights == DType::int8 || f.weights == DType::fp8) {
    fill_copies(w.scales, std::vector<float>(s.out, 1.0f / 64), w.copies);
  } else if (f.weights == DType::int4) {
    std::vector<__half> scales(groups, __float2half(1.0f / 64));
    std::vector<uint8_t> zeros(groups);
    for (auto& z : zeros) z = static_cast<uint8_t>(splitmix(state) & 0xf);
    fill_copies(w.group_scales, scales, w.copies);
    fill_copies(w.zeros, zeros, w.copies);
  }
  return w;
}

enum class Path { gemv, lt, fused };
const char* path_name(Path p) {
  return p == Path::gemv ? "gemv" : p == Path::lt ? "lt" : "fused";
}

void run(benchmark::State& state, const Format& f, const Shape& s, Path path, int64_t rows) {
  if (!cuda_device_available()) return state.SkipWithError("no CUDA GPU");
  const Weights& w = weights_for(f, s);
  // The INFERLAB_ENGINE_GEMV* switches, as the engine takes them (A/B without rebuilding).
  Projector projector(64, s.in, s.out, f.weights, f.input,
                      engine_tuning_from_environment().projection);
  if (path == Path::lt) {
    projector.set_gemv(false);
  } else {
    projector.set_gemv_max_rows(cuda::kProjectionGemvMaxRows);
  }
  const DeviceMatrix first = w.matrix(f, s, 0);
  if (path != Path::lt && !projector.takes_gemv(rows, first)) {
    return state.SkipWithError("the GEMV does not take this shape");
  }
  const bool fp32 = s.role == Role::lm_head;
  const bool swiglu = path == Path::fused && s.role == Role::gate_up;
  const bool residual_add = path == Path::fused && (s.role == Role::o || s.role == Role::down);
  const bool norm = path == Path::fused && (s.role == Role::qkv || s.role == Role::gate_up);
  const int64_t width = swiglu ? s.out / 2 : s.out;
  uint64_t seed = 7;
  std::vector<uint16_t> x_bits(rows * s.in), norm_bits(s.in, 0x3f80);
  for (auto& b : x_bits) b = 0x3f00 | (splitmix(seed) & 0x80ff);
  DeviceBuffer<bf16> x(x_bits.size()), norm_weight(s.in), residual(rows * s.out);
  x.upload(reinterpret_cast<const bf16*>(x_bits.data()), x_bits.size());
  norm_weight.upload(reinterpret_cast<const bf16*>(norm_bits.data()), norm_bits.size());
  INFERLAB_CUDA_CHECK(cudaMemset(residual.data(), 0, residual.bytes()));
  DeviceBuffer<unsigned char> y(rows * width * (fp32 ? 4 : 2));
  int next = 0;
  auto launch = [&] {
    const DeviceMatrix m = w.matrix(f, s, next);
    next = (next + 1) % w.copies;
    if (path != Path::fused) {
      projector.linear(x.data(), rows, m, nullptr, y.data(), fp32, nullptr);
      return;
    }
    cuda::GemvFused args;
    args.x = x.data();
    args.norm_weight = norm ? norm_weight.data() : nullptr;
    args.eps = 1e-5f;
    args.epilogue = swiglu         ? cuda::GemvFused::Epilogue::swiglu
                    : residual_add ? cuda::GemvFused::Epilogue::residual_add
                                   : cuda::GemvFused::Epilogue::store;
    args.y = reinterpret_cast<bf16*>(y.data());
    args.residual = residual.data();
    projector.gemv_fused(args, rows, m, nullptr);
  };
  const double activation_bytes =
      rows * s.in * 2.0 + rows * width * (fp32 ? 4.0 : 2.0) * (residual_add ? 2 : 1);
  bench::time_launches(state, kLaunches, w.bytes + activation_bytes, launch);
  state.counters["flop_per_s"] =
      benchmark::Counter(2.0 * rows * s.in * s.out, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight_bytes"] = w.bytes;
  state.SetLabel(cuda::projection_path_name(projector.last_path()));
}

void register_all() {
  for (const Format& f : kFormats) {
    for (const Shape& s : kShapes) {
      for (Path path : {Path::gemv, Path::lt, Path::fused}) {
        if (path == Path::fused && s.role == Role::lm_head) continue;
        for (int64_t rows : {1, 2, 4, 8, 16, 32, 64}) {
          if (path != Path::lt && rows > cuda::kProjectionGemvMaxRows) continue;
          const std::string name = std::string("projection/") + f.name + "/" + s.name + "/" +
                                   path_name(path) + "/rows:" + std::to_string(rows);
          benchmark::RegisterBenchmark(
              name.c_str(), [=](benchmark::State& state) { run(state, f, s, path, rows); })
              ->UseManualTime()
              ->Unit(benchmark::kMicrosecond);
        }
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
#else
BENCHMARK_MAIN();
#endif
