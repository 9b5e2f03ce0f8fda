// The serving simulator against a real (minimal, eager PyTorch) continuous-batching server on
// the H100: validation/serving_reference.py served Llama 3 8B request streams at 2 and 5
// requests/s with vLLM's default policy; the same requests go through `run_engine` with the
// calibrated H100 model and the eager PyTorch host model. docs/MEASUREMENTS.md section 11 has
// the full comparison; these bounds sit a little above today's errors so that a regression
// fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_support.hpp"
#include "cost/cost_loader.hpp"
#include "model/model_config.hpp"
#include "serve/iteration_cost.hpp"
#include "serve/metrics.hpp"
#include "serve/serving_setup.hpp"

namespace inferlab {
namespace {

double median(std::vector<double> v) {
  return percentile(std::move(v), 50);
}

TEST(ServingReference, EagerPyTorchServerOnH100) {
  std::ifstream in(inferlab::testing::test_data_dir() +
                   "/../validation/data/serving_reference_h100_2026-11-22.json");
  ASSERT_TRUE(in.good());
  const auto reference = nlohmann::json::parse(in);
  const ModelConfig model = load_model("llama-3-8b");
  const LoadedCost hw = load_cost("h100-sxm", "auto", "auto");
  PredictOptions options;
  options.framework = Framework::pytorch;
  options.cuda_graphs = false;
  EngineConfig engine;
  engine.policy = SchedulePolicy::vllm;
  engine.max_num_seqs = reference["max_slots"];
  engine.max_num_batched_tokens = reference["token_budget"];
  size_kv_cache(engine, model, hw.spec, options);
  const PredictedIterationCost cost(model, hw.spec, *hw.cost, options, load_host_overhead());
  ASSERT_EQ(reference["runs"].size(), 2u);
  for (const auto& run : reference["runs"]) {
    std::vector<ServeRequest> requests;
    for (const auto& r : run["requests"]) {
      requests.push_back({r["arrival_s"], r["prompt_tokens"], r["output_tokens"], -1, 0});
    }
    const ServeResult sim = run_engine(requests, engine, cost);
    std::vector<double> measured_decode, simulated_decode, measured_tpot, simulated_tpot;
    double measured_busy = 0.0, simulated_busy = 0.0;
    for (const auto& it : run["iterations"]) {
      measured_busy += it["duration_s"].get<double>();
      if (it["decode_seqs"].get<int>() > 0) measured_decode.push_back(it["duration_s"]);
    }
    for (const auto& it : sim.iterations) {
      simulated_busy += it.duration_s;
      if (it.decode_seqs > 0) simulated_decode.push_back(it.duration_s);
    }
    for (size_t i = 0; i < requests.size(); ++i) {
      const auto& o = run["outcomes"][i];
      measured_tpot.push_back((o["finish_s"].get<double>() - o["first_token_s"].get<double>()) /
                              static_cast<double>(requests[i].output_tokens - 1));
      simulated_tpot.push_back(sim.requests[i].tpot_s());
    }
    const double rate = run["rate_per_s"];
    // Today: median decode iteration -11.0% (2 req/s) and -1.6% (5 req/s); TPOT p50 -20.3% /
    // -17.5%: the reference's iterations have a long host-side tail (decode p90 31-32 ms, p99
    // 62-81 ms against a median of 19-21) and its prefills cost 20-30% more than predicted.
    EXPECT_NEAR(median(simulated_decode) / median(measured_decode), 1.0, 0.13) << rate;
    EXPECT_NEAR(median(simulated_tpot) / median(measured_tpot), 1.0, 0.23) << rate;
    // Both served every request, in about the same span (arrivals set most of it).
    EXPECT_EQ(summarize(sim).completed, static_cast<int64_t>(requests.size()));
    EXPECT_NEAR(simulated_busy / measured_busy, 1.0, 0.06) << rate;
  }
}

}  // namespace
}  // namespace inferlab
