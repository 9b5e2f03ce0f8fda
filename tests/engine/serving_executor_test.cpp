// serve's scheduler running the engine's CPU reference backend: a request's greedy tokens are
// the same alone or batched with others, with chunked prefill, with prefix caching and after
// preemption by recompute or by swap to host memory; the block manager's tables drive the
// backend's paged cache.
#include "engine/serving_executor.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "counting_backend.hpp"
#include "engine/cpu/cpu_backend.hpp"
#include "engine/init_weights.hpp"
#include "serve/serving_loop.hpp"
#include "test_support.hpp"

namespace inferlab::engine {
namespace {

LlamaConfig tiny() {
  return parse_llama_config(testing::tiny_llama_config(97, 256), "tiny", "test");
}

std::vector<ServeRequest> workload() {
  // Staggered arrivals (in the simulated clock the iterations' wall times advance), two pairs
  // sharing a 40-token prefix, prompts longer than the chunk budget.
  return {{0.0, 50, 6, 0, 40},   {0.0, 23, 9, -1, 0},   {0.001, 70, 4, 0, 40},
          {0.002, 9, 12, -1, 0}, {0.002, 45, 5, 1, 40}, {0.003, 60, 7, 1, 40}};
}

struct Run {
  std::vector<std::vector<int32_t>> tokens;
  ServeResult result;
};

Run serve_on_cpu(const std::vector<ServeRequest>& requests, SchedulerConfig config,
                 int64_t blocks) {
  const LlamaConfig model = tiny();
  CpuBackend backend(model, random_llama_weights(model, 3), config.block_size, blocks);
  config.kv_blocks = blocks;
  ServingExecutor executor(backend, requests, /*seed=*/9);
  Run run;
  run.result = run_serving(requests, config, executor);
  for (size_t i = 0; i < requests.size(); ++i) run.tokens.push_back(executor.generated(i));
  return run;
}

// Each request served alone, in an ample cache: the reference tokens.
std::vector<std::vector<int32_t>> alone(const std::vector<ServeRequest>& requests) {
  std::vector<std::vector<int32_t>> tokens;
  for (size_t i = 0; i < requests.size(); ++i) {
    // The same prompt ids as in the batch: the executor draws them from the request's index,
    // so serve a list where the request keeps its index and the others arrive never-ending late.
    std::vector<ServeRequest> one = requests;
    for (size_t j = 0; j < one.size(); ++j) {
      if (j != i) one[j] = {1e9, 1, 1, -1, 0};
    }
    SchedulerConfig config;
    config.block_size = 8;
    tokens.push_back(serve_on_cpu(one, config, 64).tokens[i]);
  }
  return tokens;
}

TEST(ServingExecutor, BatchedChunkedCachedAndPreemptedRunsGiveEachRequestsAloneTokens) {
  const auto requests = workload();
  const auto reference = alone(requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_EQ(static_cast<int64_t>(reference[i].size()), requests[i].output_tokens) << i;
  }

  SchedulerConfig chunked;
  chunked.policy = SchedulePolicy::chunked;
  chunked.block_size = 8;
  chunked.max_num_batched_tokens = 32;  // prompts split into chunks beside decodes
  auto batched = serve_on_cpu(requests, chunked, 64);
  EXPECT_EQ(batched.tokens, reference);

  SchedulerConfig cached = chunked;
  cached.prefix_caching = true;
  auto with_prefix = serve_on_cpu(requests, cached, 64);
  EXPECT_EQ(with_prefix.tokens, reference);
  EXPECT_GT(with_prefix.result.prefix_hit_tokens, 0);  // the second of each pair skipped 40

  // Everything at once into 11 blocks of 8 (the longest request needs 10): sequences are
  // preempted and recomputed.
  auto at_once = requests;
  for (auto& r : at_once) r.arrival_s = 0;
  auto preempted = serve_on_cpu(at_once, chunked, 11);
  EXPECT_GT(preempted.result.preemptions, 0);
  EXPECT_EQ(preempted.tokens, reference);

  SchedulerConfig vllm;
  vllm.policy = SchedulePolicy::vllm;
  vllm.block_size = 8;
  EXPECT_EQ(serve_on_cpu(requests, vllm, 64).tokens, reference);
}

TEST(ServingExecutor, SpeculationByNgramKeepsEveryRequestsGreedyTokens) {
  const auto requests = workload();
  const auto reference = alone(requests);
  SchedulerConfig chunked;
  chunked.policy = SchedulePolicy::chunked;
  chunked.block_size = 8;
  chunked.max_num_batched_tokens = 32;
  for (int k : {1, 3, 5}) {
    SchedulerConfig speculative = chunked;
    speculative.speculative = {k, 0.0};  // acceptance: measured by the engine, not drawn
    auto run = serve_on_cpu(requests, speculative, 64);
    EXPECT_EQ(run.tokens, reference) << "k = " << k;
    EXPECT_GT(run.result.draft_tokens_proposed, 0) << "k = " << k;
    EXPECT_LE(run.result.draft_tokens_accepted, run.result.draft_tokens_proposed);
  }
}

// Greedy drafts are verified from the target's argmax ids alone (forward_sample_rows: on a GPU
// no row of logits leaves the device); a request that samples brings its drafts' rows to the
// host for the verdict, and the greedy request beside it keeps its tokens.
TEST(ServingExecutor, SpeculationWithGreedyDraftsTakesOnlyIdsFromTheTarget) {
  const LlamaConfig model = tiny();
  const int64_t blocks = 64;
  SchedulerConfig config;
  config.policy = SchedulePolicy::chunked;
  config.block_size = 8;
  config.max_num_batched_tokens = 32;
  config.kv_blocks = blocks;
  config.speculative = {3, 0.0};
  struct Served {
    std::vector<int32_t> first_tokens;
    int64_t all_logits_passes, id_passes;
  };
  const auto serve = [&](const SamplingParams& second) {
    CpuBackend backend(model, random_llama_weights(model, 3), 8, blocks);
    CountingBackend counting(backend);
    ServingExecutor executor(counting);
    std::vector<ServeRequest> requests;
    for (int64_t i = 0; i < 2; ++i) {
      std::vector<int32_t> prompt;
      for (int64_t p = 0; p < 20 + 5 * i; ++p) prompt.push_back(static_cast<int32_t>(p % 6 + i));
      requests.push_back({0.0, static_cast<int64_t>(prompt.size()), 12, -1, 0});
      executor.add_request(i, prompt, i == 0 ? SamplingParams{} : second, 7 + i);
    }
    const ServeResult result = run_serving(requests, config, executor);
    EXPECT_GT(result.draft_tokens_proposed, 0);
    return Served{executor.generated(0), counting.all_logits_passes, counting.id_passes};
  };
  const Served greedy = serve(SamplingParams{});
  EXPECT_EQ(greedy.all_logits_passes, 0);
  EXPECT_GT(greedy.id_passes, 0);
  const Served mixed = serve(SamplingParams{0.8, 0, 1.0});
  EXPECT_GT(mixed.all_logits_passes, 0);
  EXPECT_EQ(mixed.first_tokens, greedy.first_tokens);
}

TEST(ServingExecutor, PreemptionBySwapKeepsEveryRequestsTokens) {
  const auto requests = workload();
  const auto reference = alone(requests);
  // Everything at once into 11 blocks of 8 (the longest request needs 10): sequences are
  // preempted, their KV copied to host memory and back into other blocks.
  auto at_once = requests;
  for (auto& r : at_once) r.arrival_s = 0;
  for (SchedulePolicy policy : {SchedulePolicy::chunked, SchedulePolicy::vllm}) {
    SchedulerConfig swapping;
    swapping.policy = policy;
    swapping.block_size = 8;
    swapping.max_num_batched_tokens = 32;
    swapping.preemption = PreemptionMode::swap;
    // No bytes priced for the swaps (as a server's configuration has it): an iteration of swaps
    // alone must still reach the executor.
    swapping.kv_block_bytes = 0;
    auto swapped = serve_on_cpu(at_once, swapping, 11);
    EXPECT_GT(swapped.result.preemptions, 0) << static_cast<int>(policy);
    EXPECT_EQ(swapped.tokens, reference) << static_cast<int>(policy);
  }
}

TEST(ServingExecutor, SwappedBlocksComeBackIntoOtherBlocksUnchanged) {
  const LlamaConfig model = tiny();
  CpuBackend backend(model, random_llama_weights(model, 3), 8, 8);
  // A 20-token prompt in blocks 0-2, its next token's logits; then the blocks to host memory,
  // the pool scribbled over, the copy back into blocks 5, 3, 7: the same logits from there.
  ForwardBatch prompt;
  prompt.sequences.push_back({std::vector<int32_t>(20, 0), 0, {0, 1, 2}, false});
  for (int32_t i = 0; i < 20; ++i) prompt.sequences[0].tokens[static_cast<size_t>(i)] = i * 3 % 97;
  backend.forward(prompt);
  const auto next = [&](std::vector<int32_t> table) {
    ForwardBatch step;
    step.sequences.push_back({{5}, 20, std::move(table), false});
    const ForwardResult r = backend.forward(step);
    return std::vector<float>(r.last(0).begin(), r.last(0).end());
  };
  const std::vector<float> before = next({0, 1, 2});
  const std::vector<int32_t> from = {0, 1, 2}, to = {5, 3, 7};
  const std::unique_ptr<KvHostCopy> copy = backend.copy_kv_blocks_to_host(from);
  const std::span<const std::byte> host = copy->bytes();
  EXPECT_EQ(static_cast<int64_t>(host.size()), 3 * backend.kv_block_host_bytes());
  backend.fill_kv_cache_random(11);
  backend.copy_kv_blocks_from_host(to, host);
  EXPECT_EQ(next({5, 3, 7}), before);

  const std::vector<int32_t> outside = {8};
  EXPECT_THROW(backend.copy_kv_blocks_to_host(outside), std::invalid_argument);
  const std::vector<int32_t> four = {0, 1, 2, 4};
  EXPECT_THROW(backend.copy_kv_blocks_from_host(four, host), std::invalid_argument);
}

TEST(ServingExecutor, RefusesASwapInOfASequenceNeverSwappedOut) {
  const LlamaConfig model = tiny();
  CpuBackend backend(model, random_llama_weights(model, 3), 8, 6);
  const std::vector<ServeRequest> requests = {{0.0, 20, 10, -1, 0}};
  ServingExecutor executor(backend, requests, 1);
  ScheduledIteration iteration;
  iteration.swaps.push_back({0, false, {1, 2}});
  EXPECT_THROW(executor.execute(iteration), std::logic_error);
}

}  // namespace
}  // namespace inferlab::engine
