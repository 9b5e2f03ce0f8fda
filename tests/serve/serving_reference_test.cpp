// The serving simulator against a real (minimal, eager PyTorch) continuous-batching server on
// the H100: validation/serving_reference.py served Llama 3 8B request streams at 2 and 5
// requests/s with vLLM's default policy; the same requests go through `simulate_serving` with the
// calibrated H100 model and the eager PyTorch host model. docs/MEASUREMENTS.md section 11 has
// the full comparison. The simulator is faster than the reference on every figure checked here,
// so each bound is one-sided: a regression that widens the gap fails, and so does one that
// overshoots to more than 2% slower than measured.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cost/cost_loader.hpp"
#include "model/model_config.hpp"
#include "serve/iteration_cost.hpp"
#include "serve/metrics.hpp"
#include "serve/serving_setup.hpp"
#include "test_support.hpp"

namespace inferlab {
namespace {

double median(std::vector<double> v) {
  return percentile(std::move(v), 50);
}

// Lowest allowed simulated / measured ratio per figure: today's ratio less 10% of its distance
// from 1, rounded down to 0.005 (the ratchet rule of docs/MEASUREMENTS.md section 12). Today
// (2026-11-23, recomputed by scripts/figures.py from the same data):
//   2 req/s: decode iteration median 0.890, TPOT p50 0.796, TTFT p50 0.746, TTFT p99 0.54,
//            busy time 0.964;
//   5 req/s: 0.985, 0.823, 0.793, 0.48, 0.963.
struct Bounds {
  double decode_median, tpot_p50, ttft_p50, ttft_p99, busy;
};
// TTFT p50 at 2 req/s: 0.72 until the refit of docs/MEASUREMENTS.md section 16 (GEMM group refitted
// with the family run's F.linear rows) moved it from 0.769 to 0.718 (section 12 lists it).
constexpr Bounds kAt2PerS{0.875, 0.775, 0.685, 0.495, 0.955};
constexpr Bounds kAt5PerS{0.98, 0.805, 0.77, 0.42, 0.955};

TEST(ServingReference, EagerPyTorchServerOnH100) {
  std::ifstream in(inferlab::testing::test_data_dir() +
                   "/../validation/data/serving_reference_h100_2026-11-22.json");
  ASSERT_TRUE(in.good());
  const auto reference = nlohmann::json::parse(in);
  const ModelConfig model = load_model("llama-3-8b");
  const LoadedCost hw = load_cost({"h100-sxm"});
  PredictOptions options;
  options.framework = Framework::pytorch;
  options.cuda_graphs = false;
  SchedulerConfig engine;
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
    const ServeResult sim = simulate_serving(requests, engine, cost);
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
    std::vector<double> measured_ttft, simulated_ttft;
    for (size_t i = 0; i < requests.size(); ++i) {
      const auto& o = run["outcomes"][i];
      measured_ttft.push_back(o["first_token_s"].get<double>() - requests[i].arrival_s);
      simulated_ttft.push_back(sim.requests[i].ttft_s());
    }
    const double rate = run["rate_per_s"];
    const Bounds& b = rate < 3.0 ? kAt2PerS : kAt5PerS;
    // The simulator runs faster than the reference server: its iterations have no host-side
    // tail (Python, garbage collection, slot moves: decode p90 31-32 ms, p99 62-81 ms against
    // a median of 19-21) and its prefills cost less than the reference's Python loop of
    // attention calls and cache copies. So every ratio below is under 1 and each check is
    // one-sided: no lower than today's ratio less 10% of its distance from 1, no higher than
    // 1 + 0.02 (the sign of the error is known; a model that overshoots it is also wrong).
    auto check = [&](const char* what, double ratio, double lowest) {
      EXPECT_GE(ratio, lowest) << what << " at " << rate << " req/s";
      EXPECT_LE(ratio, 1.02) << what << " at " << rate << " req/s";
    };
    check("median decode iteration", median(simulated_decode) / median(measured_decode),
          b.decode_median);
    check("TPOT p50", median(simulated_tpot) / median(measured_tpot), b.tpot_p50);
    check("TTFT p50", median(simulated_ttft) / median(measured_ttft), b.ttft_p50);
    check("TTFT p99", percentile(simulated_ttft, 99) / percentile(measured_ttft, 99), b.ttft_p99);
    // Both served every request, in about the same span (arrivals set most of it).
    EXPECT_EQ(summarize(sim).completed, static_cast<int64_t>(requests.size()));
    check("busy time", simulated_busy / measured_busy, b.busy);
  }
}

}  // namespace
}  // namespace inferlab
