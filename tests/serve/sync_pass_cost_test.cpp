// The engine waits for every pass's result (EngineCosts::sync_pass_s): the serving simulator
// prices it once an iteration and once a draft model's step. With a draft model each speculative
// iteration also switches models twice (EngineCosts::model_switch_per_layer_s, by both models'
// layers).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cost/cost_loader.hpp"
#include "cost/engine/engine_costs.hpp"
#include "model/model_config.hpp"
#include "serve/iteration_cost.hpp"
#include "test_support.hpp"

namespace inferlab {
namespace {

// The shipped H200 calibration with its sync pass and model switch set, written to `path`.
std::string calibration_with_sync(const std::filesystem::path& path, double sync_s,
                                  double switch_per_layer_s) {
  EngineCosts costs = load_engine_costs_file(testing::test_data_dir() + "/engine_costs/h200.json");
  costs.sync_pass_s = sync_s;
  costs.model_switch_per_layer_s = switch_per_layer_s;
  std::ofstream(path) << engine_costs_to_json(costs).dump();
  return path.string();
}

TEST(ServeCost, EachPassTheHostWaitsForAddsTheSyncCost) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("inferlab_sync_pass_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const ModelConfig model = load_model("llama-3.2-1b");
  const ModelConfig draft = load_model("llama-3.2-1b");
  PredictOptions options;
  options.framework = Framework::inferlab;
  options.cuda_graphs = true;
  auto cost_with = [&](double sync_s, double switch_s, const char* name) {
    CostRequest request{"h200"};
    request.engine_costs = calibration_with_sync(dir / name, sync_s, switch_s);
    return load_cost(request);
  };
  const LoadedCost none = cost_with(0.0, 0.0, "none.json");
  const LoadedCost some = cost_with(20e-6, 5e-6, "some.json");
  const PredictedIterationCost plain0(model, none.spec, *none.cost, options, load_host_overhead());
  const PredictedIterationCost plain1(model, some.spec, *some.cost, options, load_host_overhead());
  IterationBatch decode;
  decode.seqs.push_back({1, 1024, true, true});
  EXPECT_NEAR(plain1.time_s(decode) - plain0.time_s(decode), 20e-6, 1e-12);
  IterationBatch prefill;
  prefill.seqs.push_back({300, 300, true, false});
  EXPECT_NEAR(plain1.time_s(prefill) - plain0.time_s(prefill), 20e-6, 1e-12);

  // A verification of 4 drafted tokens after 4 draft-model steps: five passes waited for, and two
  // switches between models of 16 layers each: 5 x 20 + 5 x (16 + 16) us.
  const PredictedIterationCost spec0(model, none.spec, *none.cost, options, load_host_overhead(),
                                     &draft);
  const PredictedIterationCost spec1(model, some.spec, *some.cost, options, load_host_overhead(),
                                     &draft);
  IterationBatch verify;
  verify.seqs.push_back({5, 1024, true, true});
  verify.speculative_k = 4;
  verify.drafting_seqs = 1;
  verify.draft_context = 1020;
  EXPECT_NEAR(spec1.time_s(verify) - spec0.time_s(verify), 5 * 20e-6 + 5e-6 * 32, 1e-12);
  // Without a draft model (prompt lookup) nothing switches.
  EXPECT_NEAR(plain1.time_s(verify) - plain0.time_s(verify), 20e-6, 1e-12);

  // Other frameworks' loops are not the engine's: no term.
  options.framework = Framework::vllm;
  const PredictedIterationCost vllm0(model, none.spec, *none.cost, options, load_host_overhead());
  const PredictedIterationCost vllm1(model, some.spec, *some.cost, options, load_host_overhead());
  EXPECT_NEAR(vllm1.time_s(decode), vllm0.time_s(decode), 1e-15);
}

// A mixture of experts' GEMM form reads the experts' row counts on the host in every layer
// (engine_moe_form): Mixtral 8x7B's decode of 4 sequences (8 slots, more than 8 / 4; too few
// experts for the grouped kernels) waits for the host 32 times more than the iteration's own
// wait, and runs eagerly, graphs on or off; one sequence takes the slot kernels, graph-replayed,
// with only the iteration's wait.
TEST(ServeCost, MixtureOfExpertsGemmPassesWaitForTheHostInEveryLayer) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("inferlab_moe_sync_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const ModelConfig mixtral = load_model("mixtral-8x7b");
  PredictOptions options;
  options.framework = Framework::inferlab;
  options.cuda_graphs = true;
  auto cost_with = [&](double sync_s, const char* name) {
    CostRequest request{"h200"};
    request.engine_costs = calibration_with_sync(dir / name, sync_s, 0.0);
    return load_cost(request);
  };
  const LoadedCost none = cost_with(0.0, "none.json");
  const LoadedCost some = cost_with(20e-6, "some.json");
  const PredictedIterationCost graphs0(mixtral, none.spec, *none.cost, options,
                                       load_host_overhead());
  const PredictedIterationCost graphs1(mixtral, some.spec, *some.cost, options,
                                       load_host_overhead());
  IterationBatch one, four;
  one.seqs.push_back({1, 1024, true, true});
  for (int s = 0; s < 4; ++s) four.seqs.push_back({1, 1024, true, true});
  EXPECT_NEAR(graphs1.time_s(one) - graphs0.time_s(one), 20e-6, 1e-12);
  EXPECT_NEAR(graphs1.time_s(four) - graphs0.time_s(four), 20e-6 + 32 * 20e-6, 1e-12);
  options.cuda_graphs = false;
  const PredictedIterationCost eager0(mixtral, none.spec, *none.cost, options,
                                      load_host_overhead());
  EXPECT_NEAR(eager0.time_s(four), graphs0.time_s(four), 1e-15);  // eager either way
  EXPECT_GT(eager0.time_s(one), graphs0.time_s(one));             // the graph saves launches
}

}  // namespace
}  // namespace inferlab
