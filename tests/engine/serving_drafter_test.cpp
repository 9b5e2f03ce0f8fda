// Speculative decoding with a draft model in the serving executor, on the CPU reference: the
// draft's KV lives at the target's block ids, every prefill chunk runs through both models, and
// the verdict keeps the target's tokens (greedy) or its distribution (sampling). Checked with a
// different draft (the target's first layer alone: partial acceptance) and with the target as
// its own draft (every draft accepted), through chunked prefill, prefix caching and preemption
// by recompute.
#include "engine/serving_drafter.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "engine/cpu/cpu_backend.hpp"
#include "engine/init_weights.hpp"
#include "engine/serving_executor.hpp"
#include "serve/serving_loop.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

namespace inferlab::engine {
namespace {

LlamaConfig tiny(int64_t layers = 2, int64_t vocab = 97) {
  nlohmann::json config = testing::tiny_llama_config(vocab, 256);
  config["num_hidden_layers"] = layers;
  return parse_llama_config(config, "tiny", "test");
}

LlamaWeights target_weights() {
  return random_llama_weights(tiny(), 3);
}

enum class Draft { none, first_layer, itself };

// The draft model and its weights: the target's embedding, first layer and head (an early-exit
// draft that agrees with the target on some tokens), or the target itself.
std::unique_ptr<CpuBackend> draft_backend(Draft draft, int64_t block_size, int64_t blocks) {
  if (draft == Draft::itself) {
    return std::make_unique<CpuBackend>(tiny(), target_weights(), block_size, blocks);
  }
  LlamaWeights weights = target_weights();
  weights.layers.resize(1);
  return std::make_unique<CpuBackend>(tiny(1), std::move(weights), block_size, blocks);
}

std::vector<ServeRequest> workload() {
  // Staggered arrivals, two pairs sharing a 40-token prefix, prompts longer than the chunk
  // budget (as in serving_executor_test).
  return {{0.0, 50, 6, 0, 40},   {0.0, 23, 9, -1, 0},   {0.001, 70, 4, 0, 40},
          {0.002, 9, 12, -1, 0}, {0.002, 45, 5, 1, 40}, {0.003, 60, 7, 1, 40},
          {0.003, 17, 15, -1, 0}};
}

SchedulerConfig chunked(int k, bool prefix_caching = false) {
  SchedulerConfig config;
  config.policy = SchedulePolicy::chunked;
  config.block_size = 8;
  config.max_num_batched_tokens = 32;  // prompts split into chunks beside decodes
  config.prefix_caching = prefix_caching;
  config.speculative = {k, 0.0};  // acceptance: measured by the engine, not drawn
  return config;
}

struct ServedRun {
  std::vector<std::vector<int32_t>> tokens;
  ServeResult result;
  int64_t draft_passes = 0;
};

ServedRun serve_on_cpu(const std::vector<ServeRequest>& requests, SchedulerConfig config,
                       int64_t blocks, Draft draft) {
  CpuBackend backend(tiny(), target_weights(), config.block_size, blocks);
  config.kv_blocks = blocks;
  ServingExecutor executor(backend, requests, /*seed=*/9);
  std::unique_ptr<CpuBackend> drafter;
  if (draft != Draft::none) {
    drafter = draft_backend(draft, config.block_size, blocks);
    executor.set_draft_model(*drafter);
  }
  ServedRun run;
  run.result = run_serving(requests, config, executor);
  for (size_t i = 0; i < requests.size(); ++i) run.tokens.push_back(executor.generated(i));
  run.draft_passes = executor.draft_passes();
  return run;
}

TEST(ServingDrafter, GreedyTokensWithADraftModelAreTheTokensWithoutSpeculation) {
  const auto requests = workload();
  const auto reference = serve_on_cpu(requests, chunked(0), 64, Draft::none).tokens;
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_EQ(static_cast<int64_t>(reference[i].size()), requests[i].output_tokens) << i;
  }
  // Everything at once into 11 blocks of 8 (the longest request needs 10): preempted and
  // recomputed, the draft's KV along with the target's.
  auto at_once = requests;
  for (auto& r : at_once) r.arrival_s = 0;
  for (Draft draft : {Draft::first_layer, Draft::itself}) {
    const std::string name = draft == Draft::itself ? "itself" : "first layer";
    for (int k : {1, 3, 4}) {
      const auto cached = serve_on_cpu(requests, chunked(k, true), 64, draft);
      EXPECT_EQ(cached.tokens, reference) << name << ", k = " << k;
      EXPECT_GT(cached.result.prefix_hit_tokens, 0);
      EXPECT_GT(cached.result.draft_tokens_proposed, 0);
      // k passes per iteration with drafts, at most.
      EXPECT_GT(cached.draft_passes, 0);

      const auto preempted = serve_on_cpu(at_once, chunked(k), 11, draft);
      EXPECT_GT(preempted.result.preemptions, 0) << name << ", k = " << k;
      EXPECT_EQ(preempted.tokens, reference) << name << ", k = " << k;

      // Preempted by swap: the draft's KV goes to host memory and back with the target's.
      SchedulerConfig swapping = chunked(k);
      swapping.preemption = PreemptionMode::swap;
      swapping.kv_block_bytes = 1024;
      const auto swapped = serve_on_cpu(at_once, swapping, 11, draft);
      EXPECT_GT(swapped.result.preemptions, 0) << name << ", k = " << k;
      EXPECT_EQ(swapped.tokens, reference) << name << ", k = " << k;

      for (const ServedRun* run : {&cached, &preempted, &swapped}) {
        const ServeResult& r = run->result;
        if (draft == Draft::itself) {
          // The target agrees with itself: every draft is kept (the scheduler asks for no more
          // drafts than the output has room for).
          EXPECT_EQ(r.draft_tokens_accepted, r.draft_tokens_proposed) << "k = " << k;
        } else {
          EXPECT_LT(r.draft_tokens_accepted, r.draft_tokens_proposed) << "k = " << k;
          EXPECT_GT(r.draft_tokens_accepted, 0) << "k = " << k;
        }
      }
    }
  }
  SchedulerConfig vllm = chunked(3);
  vllm.policy = SchedulePolicy::vllm;
  EXPECT_EQ(serve_on_cpu(requests, vllm, 64, Draft::first_layer).tokens, reference);
}

// The server's way in: prompts, sampling parameters and seeds per request.
struct SampledRun {
  std::vector<std::vector<int32_t>> tokens;
  ServeResult result;
};

SampledRun serve_sampled(const std::vector<SamplingParams>& sampling, int k, Draft draft) {
  const int64_t blocks = 40;
  std::vector<ServeRequest> requests;
  CpuBackend backend(tiny(), target_weights(), 8, blocks);
  ServingExecutor executor(backend);
  for (size_t i = 0; i < sampling.size(); ++i) {
    const auto prompt_tokens = static_cast<int64_t>(12 + 7 * i);
    std::vector<int32_t> prompt;
    for (int64_t p = 0; p < prompt_tokens; ++p) {
      prompt.push_back(static_cast<int32_t>((p * 31 + static_cast<int64_t>(i) * 17) % 97));
    }
    requests.push_back({0.0, prompt_tokens, 10 + static_cast<int64_t>(i), -1, 0});
    executor.add_request(static_cast<int64_t>(i), prompt, sampling[i], /*seed=*/100 + i);
  }
  std::unique_ptr<CpuBackend> drafter;
  if (draft != Draft::none) {
    drafter = draft_backend(draft, 8, blocks);
    executor.set_draft_model(*drafter);
  }
  SchedulerConfig config = chunked(k);
  config.kv_blocks = blocks;
  SampledRun run;
  run.result = run_serving(requests, config, executor);
  for (size_t i = 0; i < requests.size(); ++i) {
    run.tokens.push_back(executor.generated(i));
    EXPECT_EQ(static_cast<int64_t>(run.tokens.back().size()), requests[i].output_tokens) << i;
  }
  return run;
}

TEST(ServingDrafter, SamplingRequestsFinishAndAreDeterministicForAFixedSeed) {
  const SamplingParams greedy;
  const SamplingParams warm{0.9, 0, 0.95}, top_k{0.7, 20, 1.0};
  const std::vector<SamplingParams> mixed = {warm, greedy, top_k, warm, greedy};
  const auto plain = serve_sampled(mixed, 0, Draft::none);
  for (Draft draft : {Draft::first_layer, Draft::itself}) {
    const auto once = serve_sampled(mixed, 3, draft);
    const auto again = serve_sampled(mixed, 3, draft);
    EXPECT_EQ(once.tokens, again.tokens);
    EXPECT_GT(once.result.draft_tokens_proposed, 0);
    // Greedy requests batched with sampling ones (the draft's logits then go to the host) keep
    // their tokens.
    EXPECT_EQ(once.tokens[1], plain.tokens[1]);
    EXPECT_EQ(once.tokens[4], plain.tokens[4]);
    for (const auto& tokens : once.tokens) {
      for (int32_t t : tokens) EXPECT_TRUE(t >= 0 && t < 97) << t;
    }
    if (draft == Draft::itself) {
      // The draft's distribution is the target's: min(1, p/q) = 1 keeps every draft.
      EXPECT_EQ(once.result.draft_tokens_accepted, once.result.draft_tokens_proposed);
    }
  }
}

// Preemption by swap: the draft's KV goes to host memory and back into the target's new blocks
// with swap(), so the next round drafts from where it was (one token in its first pass) and as
// it would have without the swap. A drafter that was not told sees the blocks moved and runs the
// sequence again from its start.
TEST(ServingDrafter, SwapMovesTheDraftsKvWithTheTargets) {
  CpuBackend target(tiny(), target_weights(), 8, 16);
  CpuBackend unswapped(tiny(), target_weights(), 8, 16), swapped(tiny(), target_weights(), 8, 16),
      untold(tiny(), target_weights(), 8, 16);
  BatchDrafter a(unswapped, target), b(swapped, target), c(untold, target);
  std::vector<int32_t> tokens(32);
  for (size_t p = 0; p < tokens.size(); ++p) tokens[p] = static_cast<int32_t>((p * 13 + 5) % 97);
  int64_t reads = 0;
  const auto token_at = [&](int64_t, int64_t p) {
    ++reads;
    return tokens[static_cast<size_t>(p)];
  };
  const SamplingParams greedy;
  Xoshiro256 rng(1);
  const BlockTable first{0, 1, 2};
  const BatchDrafter::Item prefill{0, 0, 20, false, &first, &greedy, &rng};
  const BatchDrafter::Item decode{0, 20, 4, true, &first, &greedy, &rng};
  std::vector<int32_t> proposals;
  for (BatchDrafter* drafter : {&a, &b, &c}) {
    drafter->propose({&prefill, 1}, token_at);
    const auto drafted = drafter->propose({&decode, 1}, token_at).tokens[0];
    ASSERT_EQ(drafted.size(), 3u);
    if (drafter != &a) EXPECT_EQ(drafted, proposals);
    proposals = drafted;
  }
  // Out to host memory; the pool's blocks are then overwritten; back into blocks 5 to 7.
  b.swap(0, true, first);
  swapped.fill_kv_cache_random(7);
  untold.fill_kv_cache_random(7);
  const BlockTable moved{5, 6, 7};
  b.swap(0, false, moved);
  // The round kept one draft: 22 positions computed, the next round drafts after position 22.
  tokens[21] = proposals[0];
  const BlockTable first_grown{0, 1, 2, 3}, moved_grown{5, 6, 7, 8};
  const BatchDrafter::Item next{0, 22, 4, true, &first_grown, &greedy, &rng};
  const BatchDrafter::Item next_moved{0, 22, 4, true, &moved_grown, &greedy, &rng};
  reads = 0;
  const auto expected = a.propose({&next, 1}, token_at).tokens[0];
  EXPECT_EQ(reads, 1);
  reads = 0;
  EXPECT_EQ(b.propose({&next_moved, 1}, token_at).tokens[0], expected);
  EXPECT_EQ(reads, 1);
  reads = 0;
  EXPECT_EQ(c.propose({&next_moved, 1}, token_at).tokens[0], expected);
  EXPECT_EQ(reads, 23);  // positions 0 to 22 again
}

TEST(ServingDrafter, RefusesADraftThatCannotShareTheBlockTables) {
  CpuBackend target(tiny(), target_weights(), 8, 16);
  ServingExecutor executor(target);
  const LlamaConfig other_vocab = tiny(2, 101);
  CpuBackend wrong_vocab(other_vocab, random_llama_weights(other_vocab, 4), 8, 16);
  try {
    executor.set_draft_model(wrong_vocab);
    ADD_FAILURE() << "a draft of another vocabulary was taken";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("vocabulary (101 tokens) is not the target's (97)"),
              std::string::npos)
        << error.what();
  }
  CpuBackend wrong_block(tiny(), target_weights(), 16, 16);
  EXPECT_THROW(executor.set_draft_model(wrong_block), InputError);
  CpuBackend too_few(tiny(), target_weights(), 8, 15);
  EXPECT_THROW(executor.set_draft_model(too_few), InputError);
  CpuBackend more(tiny(), target_weights(), 8, 20);  // more blocks than the target is fine
  EXPECT_NO_THROW(executor.set_draft_model(more));
}

}  // namespace
}  // namespace inferlab::engine
