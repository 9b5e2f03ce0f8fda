// Behaviour that serving papers report, checked on synthetic workloads with Llama 3 8B on the
// H100 (predicted iteration costs from the shipped calibration).
#include <gtest/gtest.h>

#include "cli/workload_grammar.hpp"
#include "cost/cost_loader.hpp"
#include "model/model_config.hpp"
#include "predict/request_predictor.hpp"
#include "serve/capacity.hpp"
#include "serve/iteration_cost.hpp"
#include "serve/metrics.hpp"
#include "serve/serving_setup.hpp"
#include "serve/workload.hpp"

namespace inferlab {
namespace {

struct Deployment {
  ModelConfig model = load_model("llama-3-8b");
  LoadedCost hw = load_cost({"h100-sxm"});
  PredictOptions options;
  PredictedIterationCost cost{model, hw.spec, *hw.cost, options, load_host_overhead()};
  SchedulerConfig engine(SchedulePolicy policy, double memory_utilization = 0.9) const {
    SchedulerConfig c;
    c.policy = policy;
    c.max_num_batched_tokens = policy == SchedulePolicy::chunked ? 2048 : 8192;
    PredictOptions o = options;
    o.gpu_memory_utilization = memory_utilization;
    size_kv_cache(c, model, hw.spec, o);
    return c;
  }
};

std::vector<ServeRequest> workload(double rate, int64_t requests, const std::string& input,
                                   const std::string& output, int64_t prefix_tokens = 0) {
  WorkloadSpec w;
  w.requests = requests;
  w.rate_per_s = rate;
  w.input = cli::parse_length_distribution(input, "input");
  w.output = cli::parse_length_distribution(output, "output");
  if (prefix_tokens > 0) w.prefix = {prefix_tokens, 4, 1.0};
  return generate_workload(w);
}

TEST(ServeCost, TheEngineReplaysGraphsForDecodesOfEqualLengthPaddedToAPowerOfTwo) {
  const ModelConfig model = load_model("llama-3-8b");
  const LoadedCost hw = load_cost({"h200"});
  PredictOptions options;
  options.framework = Framework::inferlab;
  options.cuda_graphs = true;
  PredictedIterationCost cost(model, hw.spec, *hw.cost, options, load_host_overhead());
  // Five decodes run as the graph of 8 rows: the flat ops, LM head and sampler at 8 rows.
  IterationBatch decodes;
  for (int i = 0; i < 5; ++i) decodes.seqs.push_back({1, 1024, true, true});
  EXPECT_NEAR(cost.time_s(decodes),
              cost.flat_s(8, true) + cost.attention_s(5, 1, 1024) + cost.sampled_s(8), 1e-12);
  // Capped at --max-num-seqs.
  cost.set_graph_batch_limit(6);
  EXPECT_NEAR(cost.time_s(decodes),
              cost.flat_s(6, true) + cost.attention_s(5, 1, 1024) + cost.sampled_s(6), 1e-12);
  // A prefill chunk beside them runs eagerly, every row as it is.
  IterationBatch mixed = decodes;
  mixed.seqs.push_back({100, 100, false, false});
  EXPECT_NEAR(cost.time_s(mixed),
              cost.flat_s(105, false) + cost.attention_s(1, 100, 100) +
                  cost.attention_s(5, 1, 1024) + cost.sampled_s(5),
              1e-12);
  EXPECT_GT(cost.flat_s(105, false), cost.flat_s(105, true));  // the host's launches show

  // Three speculative verifications of 4 drafts each run as the graph of 4 sequences x 5
  // tokens, every row sampled, their attention the decode kernel's over the 15 tokens (contexts
  // 1020..1024 each: a mean of 1022, 1024 on the 16-token grain); with one of them proposing
  // fewer, eagerly, every row as it is (contexts 13289 / 13 = 1022 on average).
  IterationBatch verify;
  for (int i = 0; i < 3; ++i) verify.seqs.push_back({5, 1024, true, true});
  EXPECT_NEAR(cost.time_s(verify),
              cost.flat_s(20, true) + cost.attention_s(15, 1, 1024, true) + cost.sampled_s(20),
              1e-12);
  IterationBatch ragged = verify;
  ragged.seqs.back().new_tokens = 3;
  EXPECT_NEAR(cost.time_s(ragged),
              cost.flat_s(13, false) + cost.attention_s(13, 1, 1024, true) + cost.sampled_s(13),
              1e-12);
  // Past 64 tokens (13 sequences of 5: 65, unpadded under the limit of 6 set above), the tiled
  // kernel per sequence.
  IterationBatch wide;
  for (int i = 0; i < 13; ++i) wide.seqs.push_back({5, 1024, true, true});
  EXPECT_NEAR(cost.time_s(wide),
              cost.flat_s(65, true) + cost.attention_s(13, 5, 1024) + cost.sampled_s(65), 1e-12);

  // With a draft model every prefill chunk also runs through it.
  const ModelConfig draft = load_model("llama-3.2-1b");
  PredictedIterationCost speculating(model, hw.spec, *hw.cost, options, load_host_overhead(),
                                     &draft);
  IterationBatch prefill;
  prefill.seqs.push_back({200, 200, true, false});
  EXPECT_GT(speculating.draft_prefill_s(200), 0.0);
  EXPECT_NEAR(speculating.time_s(prefill), cost.time_s(prefill) + speculating.draft_prefill_s(200),
              1e-12);
}

// The engine's decode kernel plans its splits for the whole batch (model/engine_decode_plan.hpp):
// beside short ones, a 40,000-token sequence's 8 KV heads x 3 splits each stream 21,846
// positions while the other SMs idle, which the mean context does not show.
TEST(ServeCost, AnUnevenDecodeBatchIsNoFasterThanItsLongestSequencesCtas) {
  const ModelConfig model = load_model("llama-3.1-8b");
  CostRequest request{"h200"};
  request.engine_costs = "auto";  // the engine's own calibration, as --framework inferlab has it
  const LoadedCost hw = load_cost(request);
  PredictOptions options;
  options.framework = Framework::inferlab;
  options.cuda_graphs = true;
  PredictedIterationCost cost(model, hw.spec, *hw.cost, options, load_host_overhead());
  const auto fitted = hw.cost->fitted_step_costs();
  ASSERT_TRUE(fitted.has_value());
  ASSERT_GT(fitted->decode_cta_bps, 0.0);  // the shipped H200 calibration prices it
  // 16 graph rows (ten sequences padded), the bound 65536: 3 splits of 21846 positions; each
  // position's key and value of one KV head are 2 x 128 bf16 values.
  const double straggler_s = 32.0 * 2.0 * 21846.0 * 256.0 / fitted->decode_cta_bps;
  EXPECT_NEAR(cost.decode_straggler_s(16, 40000), straggler_s, 1e-12);
  IterationBatch uneven;
  for (int i = 0; i < 9; ++i) uneven.seqs.push_back({1, 1024, true, true});
  uneven.seqs.push_back({1, 40000, true, true});
  const int64_t mean = (9 * 1024 + 40000) / 10;  // 4921, on the 16-token grain: 4928
  const double balanced_s = cost.attention_s(10, 1, 4928);
  ASSERT_GT(straggler_s, balanced_s);
  // (and the pass the host waits for, EngineCosts::sync_pass_s)
  const double sync_s = fitted->sync_pass_s;
  EXPECT_NEAR(cost.time_s(uneven),
              cost.flat_s(16, true) + straggler_s + cost.sampled_s(16) + sync_s, 1e-12);
  (void)mean;
  // Ten sequences at 4928 each: balanced, the mean prices them.
  IterationBatch even;
  for (int i = 0; i < 10; ++i) even.seqs.push_back({1, 4928, true, true});
  EXPECT_NEAR(cost.time_s(even), cost.flat_s(16, true) + balanced_s + cost.sampled_s(16) + sync_s,
              1e-12);
  // Seventeen rows and up (32 padded): one CTA per SM already, a single split of the bound.
  EXPECT_NEAR(cost.decode_straggler_s(32, 40000),
              32.0 * 2.0 * 40000.0 * 256.0 / fitted->decode_cta_bps, 1e-12);
}

// A speculative verification's attention runs the decode kernel over its tokens as sequences of
// one query (the by-token view), which reads the cache after its grid wait: it is priced as the
// engine without early reads prices a decode, where a real decode of as many sequences is not.
TEST(ServeCost, TheByTokenAttentionReadsTheCacheAfterItsGridWait) {
  const ModelConfig model = load_model("llama-3-8b");
  CostRequest request{"h200"};
  request.engine_costs = "auto";
  const LoadedCost hw = load_cost(request);
  PredictOptions options;
  options.framework = Framework::inferlab;
  options.cuda_graphs = true;
  PredictedIterationCost cost(model, hw.spec, *hw.cost, options, load_host_overhead());
  PredictOptions after_wait = options;
  after_wait.early_cache_reads = false;
  PredictedIterationCost late(model, hw.spec, *hw.cost, after_wait, load_host_overhead());
  EXPECT_DOUBLE_EQ(cost.attention_s(15, 1, 1024, true), late.attention_s(15, 1, 1024));
  EXPECT_NE(cost.attention_s(15, 1, 1024), late.attention_s(15, 1, 1024));
}

TEST(ServeCost, IterationsAddUpToWholeSteps) {
  Deployment d;
  StepContext c =
      make_step_context(d.model, d.hw.spec, *d.hw.cost, d.options, load_host_overhead());
  // A decode batch of 64 at context 1024 (a multiple of the 16-token grain) is the decode step,
  // up to the sustained-clock scaling, which follows each step's compute-bound share.
  IterationBatch decode;
  for (int i = 0; i < 64; ++i) decode.seqs.push_back({1, 1024, true, true});
  const double step_s = predict_step(c, {Phase::decode, 64, 1, 1024}).time_s;
  EXPECT_NEAR(d.cost.time_s(decode), step_s, 1e-4 * step_s);
  // A lone 2048-token prompt is the prefill step.
  IterationBatch prefill;
  prefill.seqs.push_back({2048, 2048, true, false});
  EXPECT_NEAR(d.cost.time_s(prefill), predict_step(c, {Phase::prefill, 1, 2048, 2048}).time_s,
              1e-9);
}

TEST(ServeBehaviour, ChunkedPrefillLowersTailTpotAtASmallTtftCost) {
  Deployment d;
  auto requests = workload(4.0, 400, "fixed:4096", "fixed:256");
  auto prefill_first =
      summarize(simulate_serving(requests, d.engine(SchedulePolicy::vllm), d.cost));
  auto chunked = summarize(simulate_serving(requests, d.engine(SchedulePolicy::chunked), d.cost));
  // Long prompts stall every running decode under prefill-first scheduling; chunks bound the
  // stall (Sarathi-Serve, OSDI 2024).
  EXPECT_LT(chunked.tpot.p99_s, 0.95 * prefill_first.tpot.p99_s);
  EXPECT_LT(chunked.itl.p99_s, 0.5 * prefill_first.itl.p99_s);
  // The price: a prompt now takes two iterations shared with decodes.
  EXPECT_GT(chunked.ttft.p50_s, prefill_first.ttft.p50_s);
  EXPECT_LT(chunked.ttft.p50_s, 2.0 * prefill_first.ttft.p50_s);
}

TEST(ServeBehaviour, PrefixCachingLowersTtftInProportionToTheSharedFraction) {
  Deployment d;
  SchedulerConfig c = d.engine(SchedulePolicy::chunked);
  c.prefix_caching = true;
  std::vector<double> ttft;
  for (int64_t prefix : {0, 512, 1024, 1536}) {
    auto requests =
        workload(0.5, 300, "fixed:" + std::to_string(2048 - prefix), "fixed:64", prefix);
    auto s = summarize(simulate_serving(requests, c, d.cost));
    ttft.push_back(s.ttft.mean_s);
    // The first request of each of the 4 groups misses: 4 of 300 prompts.
    EXPECT_NEAR(s.prefix_hit_rate, static_cast<double>(prefix) / 2048 * (296.0 / 300), 0.002);
  }
  // Equal steps of shared prefix take off (nearly) equal slices of TTFT. The load is light
  // (0.5 requests/s) so that TTFT is the prefill itself: under load, queueing makes TTFT grow
  // faster than the prompt.
  const double step = (ttft[0] - ttft[3]) / 3.0;
  EXPECT_GT(step, 0.0);
  for (int i = 1; i < 4; ++i) EXPECT_NEAR(ttft[0] - ttft[i], i * step, 0.15 * step) << i;
  EXPECT_LT(ttft[3], 0.45 * ttft[0]);
}

TEST(ServeBehaviour, LatencyRisesSharplyNearCapacity) {
  Deployment d;
  SchedulerConfig c = d.engine(SchedulePolicy::chunked);
  // Capacity: the offline (all-at-once) throughput in requests per second.
  auto offline =
      summarize(simulate_serving(workload(0.0, 600, "fixed:1024", "fixed:128"), c, d.cost));
  const double capacity = offline.requests_per_s;
  auto at = [&](double share) {
    return summarize(
        simulate_serving(workload(share * capacity, 600, "fixed:1024", "fixed:128"), c, d.cost));
  };
  const auto half = at(0.5), near = at(0.9), over = at(1.2);
  EXPECT_LT(half.ttft.p99_s, 0.5);
  EXPECT_GT(near.ttft.p99_s, 1.5 * half.ttft.p99_s);
  EXPECT_GT(over.ttft.p99_s, 5.0 * near.ttft.p99_s);            // a queue that only grows
  EXPECT_NEAR(over.requests_per_s, capacity, 0.15 * capacity);  // throughput cannot pass it
}

TEST(ServeBehaviour, ThroughputSaturatesAtTheKvCacheBatchLimit) {
  Deployment d;
  auto requests = workload(0.0, 1500, "fixed:1024", "fixed:256");
  std::vector<ServeSummary> by_limit;
  for (int64_t seqs : {32, 128, 1024, 4096}) {
    SchedulerConfig c = d.engine(SchedulePolicy::chunked, 0.5);  // a smaller KV cache
    c.max_num_seqs = seqs;
    by_limit.push_back(summarize(simulate_serving(requests, c, d.cost)));
  }
  // Below the KV limit more sequences per batch give more tokens per second; past it the
  // batch is as large as the cache allows and throughput stays put.
  EXPECT_GT(by_limit[1].output_tokens_per_s, 1.5 * by_limit[0].output_tokens_per_s);
  EXPECT_GT(by_limit[2].max_kv_use, 0.95);
  EXPECT_NEAR(by_limit[3].output_tokens_per_s, by_limit[2].output_tokens_per_s,
              0.02 * by_limit[2].output_tokens_per_s);
  EXPECT_NEAR(by_limit[3].mean_batch_seqs, by_limit[2].mean_batch_seqs, 1.0);
}

TEST(ServeCapacity, RateSearchBracketsTheSlo) {
  Deployment d;
  SchedulerConfig c = d.engine(SchedulePolicy::chunked);
  auto unit = workload(1.0, 300, "fixed:1024", "fixed:128");
  CapacitySlo slo{0.5, 0.030};
  RateSearch r = find_max_rate(unit, c, d.cost, slo, 0.02);
  ASSERT_GT(r.max_rate_per_s, 0.0);
  EXPECT_LE(r.at_max.ttft.p99_s, slo.ttft_p99_s);
  EXPECT_LE(r.at_max.tpot.p99_s, slo.tpot_p99_s);
  // 5% faster misses the SLO.
  std::vector<ServeRequest> faster = unit;
  for (auto& q : faster) q.arrival_s /= 1.05 * r.max_rate_per_s;
  auto s = summarize(simulate_serving(faster, c, d.cost));
  EXPECT_TRUE(s.ttft.p99_s > slo.ttft_p99_s || s.tpot.p99_s > slo.tpot_p99_s);
  EXPECT_NEAR(cost_per_million_tokens(3.6, 2, 1000.0), 2.0, 1e-12);  // 7.2 USD/h at 1000 tok/s
}

}  // namespace
}  // namespace inferlab
