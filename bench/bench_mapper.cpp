// How long the tile-level mapper takes to search every operator of one GPT-3 175B layer, at
// prefill (2048 tokens) and decode (batch 8, context 2048), on a 4-device A100 template
// (tensor parallel over 4). Each iteration starts from an empty mapping cache. LLMCompass
// reports about 16 minutes for 26,400 mappings of this workload.
#include <benchmark/benchmark.h>

#include "cost/tilesim/tilesim_cost.hpp"
#include "model/model_config.hpp"
#include "model/step_graph.hpp"

namespace {
using namespace inferlab;

void BM_MapGpt3LayerOn4xA100(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  ModelConfig model = load_model("gpt3-175b");
  model.num_layers = 1;  // one layer: the mapper's work per distinct operator
  HardwareTemplate hw = load_hardware_template("a100-80g");
  ShardDims shard = shard_dims(model, 4);
  std::vector<Op> prefill, decode;
  build_step_graph(model, {Phase::prefill, 1, 2048, 2048}, Precision{}, KernelPlan{}, shard,
                   prefill);
  build_step_graph(model, {Phase::decode, 8, 1, 2048}, Precision{}, KernelPlan{}, shard, decode);
  int64_t mappings = 0;
  for (auto _ : state) {
    TileSimCostModel cost(hw, threads);
    double total_s = 0.0;
    for (const auto* ops : {&prefill, &decode}) {
      for (const Op& op : *ops) total_s += cost.price(op).time_s;
    }
    benchmark::DoNotOptimize(total_s);
    mappings = cost.mapper().mappings_evaluated();
  }
  state.counters["mappings"] = static_cast<double>(mappings);
}
BENCHMARK(BM_MapGpt3LayerOn4xA100)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
