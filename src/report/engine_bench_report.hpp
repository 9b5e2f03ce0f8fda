#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine_bench.hpp"
#include "predict/request_predictor.hpp"

namespace inferlab {

struct BenchSetup {
  std::string model;
  std::string device;       // "cuda" or "cpu"
  std::string device_name;  // the GPU's name, or "cpu"
  engine::BenchOptions options;
  int64_t weight_bytes = 0;
  int64_t kv_bytes_per_element = 2;
  bool cuda_graphs = false;    // decode steps replayed from captured graphs
  int64_t tp = 1;              // tensor-parallel ranks (GPUs, or CPU threads)
  std::string quant = "bf16";  // QuantConfig::describe()
};

// A timing's median, mean, min, max, p10, p90 (ms) and sample count.
nlohmann::json timing_stats_json(const engine::TimingStats& stats);
// Per kernel class: ms, launches, bytes, FLOPs and the achieved GB/s and TFLOP/s.
nlohmann::json kernel_classes_json(const std::vector<engine::KernelClassTime>& kernels);
// A pass's routing (engine/routing_stats.hpp): layers, tokens, experts_reached_mean,
// max_rows_mean and sorted_loads_sum (each layer's slot counts, busiest first, summed).
nlohmann::json routing_json(const engine::RoutingStats& routing);

// `bench`: the fields predict prints (prefill_ms, ttft_ms, tpot_ms, e2e_ms, decode_tokens_per_s,
// memory{...}) from the measurement, the spread of every timing, and per-kernel-class GPU time
// with achieved bandwidth and FLOP rate; with a prediction, "predicted" holds predict's figures
// and "measured_over_predicted" the ratios.
nlohmann::json bench_json(const BenchSetup& setup, const engine::BenchResult& result,
                          const std::optional<RequestPrediction>& predicted);
std::string bench_text(const BenchSetup& setup, const engine::BenchResult& result,
                       const std::optional<RequestPrediction>& predicted);

}  // namespace inferlab
