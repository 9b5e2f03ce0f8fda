#pragma once
// What the engine's GPU benchmarks share: the probe's measured HBM read bandwidth for the GPU
// they run on, and the counters that set a rate beside it.
#include <benchmark/benchmark.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda_backend.hpp"
#include "util/data_dir.hpp"

namespace inferlab::bench {

// The probe's HBM read bandwidth for this GPU in bytes/s (data/profiles/<gpu>.json), 0 when no
// shipped profile names it.
inline double probe_hbm_read_bytes_per_s() {
  const std::string name = engine::cuda_device_name();
  const char* profile = name.find("H200") != std::string::npos   ? "h200"
                        : name.find("H100") != std::string::npos ? "h100-sxm"
                                                                 : nullptr;
  if (profile == nullptr) return 0;
  std::ifstream in(data_dir() / "profiles" / (std::string(profile) + ".json"));
  if (!in) return 0;
  const auto json = nlohmann::json::parse(in, nullptr, false);
  if (json.is_discarded()) return 0;
  return json.value("/memory/hbm/read/bytes_per_s"_json_pointer, 0.0);
}

// bytes_per_s, and of_probe_hbm_read where the probe measured this GPU.
inline void set_bandwidth_counters(benchmark::State& state, double bytes_per_iteration) {
  state.counters["bytes_per_s"] =
      benchmark::Counter(bytes_per_iteration, benchmark::Counter::kIsIterationInvariantRate);
  static const double probe = probe_hbm_read_bytes_per_s();
  if (probe > 0) {
    state.counters["of_probe_hbm_read"] = benchmark::Counter(
        bytes_per_iteration / probe, benchmark::Counter::kIsIterationInvariantRate);
  }
}

// Times `launch` (once untimed first) `launches` times per iteration with CUDA events on the
// default stream, reports the time per launch and the bandwidth counters.
inline void time_launches(benchmark::State& state, int launches, double bytes_per_launch,
                          const std::function<void()>& launch) {
  cudaEvent_t start, stop;
  INFERLAB_CUDA_CHECK(cudaEventCreate(&start));
  INFERLAB_CUDA_CHECK(cudaEventCreate(&stop));
  launch();  // warm-up (plans, first touch)
  for (auto _ : state) {
    INFERLAB_CUDA_CHECK(cudaEventRecord(start));
    for (int i = 0; i < launches; ++i) launch();
    INFERLAB_CUDA_CHECK(cudaEventRecord(stop));
    INFERLAB_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    INFERLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    state.SetIterationTime(ms * 1e-3 / launches);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  set_bandwidth_counters(state, bytes_per_launch);
}

}  // namespace inferlab::bench
