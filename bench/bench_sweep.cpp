// Speed of the predictor itself: `inferlab sweep` must price 10,000 points in under 1 s.
#include <benchmark/benchmark.h>

#include "cost/cost_loader.hpp"
#include "cost/roofline.hpp"
#include "predict/sweep.hpp"

namespace {

void BM_Sweep10000Points(benchmark::State& state) {
  using namespace inferlab;
  ModelConfig model = load_model("llama-3-8b");
  HardwareSpec hw = load_hardware("h100-sxm");
  RooflineCostModel cost(hw, load_delay_factors(hw));
  HostOverhead host = load_host_overhead();
  // 10 batches x 10 inputs x 10 outputs x 2 TP x 5 weight formats = 10,000 points.
  SweepGrid grid;
  grid.batch = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
  grid.input = {128, 256, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192};
  grid.output = {16, 32, 64, 96, 128, 160, 192, 256, 384, 512};
  grid.tp = {1, 2};
  grid.weights = {DType::bf16, DType::fp16, DType::fp8, DType::int8, DType::int4};
  PredictOptions base;
  for (auto _ : state) {
    auto rows = run_sweep(model, hw, cost, base, host, grid);
    benchmark::DoNotOptimize(rows.data());
  }
  state.counters["points"] = 10000;
}
BENCHMARK(BM_Sweep10000Points)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_PredictDefault(benchmark::State& state) {
  using namespace inferlab;
  ModelConfig model = load_model("llama-3.2-1b");
  HardwareSpec hw = load_hardware("h100-sxm");
  RooflineCostModel cost(hw, load_delay_factors(hw));
  HostOverhead host = load_host_overhead();
  PredictOptions options;
  for (auto _ : state) {
    auto r = predict_request(model, hw, cost, options, host);
    benchmark::DoNotOptimize(r.e2e_s);
  }
}
BENCHMARK(BM_PredictDefault)->Unit(benchmark::kMicrosecond);

// The same request with the calibrated model (GEMM tilings searched for every GEMM).
void BM_PredictDefaultCalibrated(benchmark::State& state) {
  using namespace inferlab;
  ModelConfig model = load_model("llama-3.2-1b");
  LoadedCost loaded = load_cost({"h100-sxm", kProfileAuto, CostMethod::calibrated});
  HostOverhead host = load_host_overhead();
  PredictOptions options;
  for (auto _ : state) {
    auto r = predict_request(model, loaded.spec, *loaded.cost, options, host);
    benchmark::DoNotOptimize(r.e2e_s);
  }
}
BENCHMARK(BM_PredictDefaultCalibrated)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
