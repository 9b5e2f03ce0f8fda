// Small serving scenarios worked out by hand, with an iteration cost of 1 s + 10 ms per token.
#include "serve/serving_loop.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "serve/executor.hpp"
#include "serve/metrics.hpp"

namespace inferlab {
namespace {

class LinearCost : public IterationCost {
 public:
  double time_s(const IterationBatch& batch) const override {
    return 1.0 + 0.01 * static_cast<double>(batch.total_tokens());
  }
};

ServeRequest request(double arrival, int64_t prompt, int64_t output, int64_t prefix_id = -1,
                     int64_t prefix_tokens = 0) {
  return {arrival, prompt, output, prefix_id, prefix_tokens};
}

SchedulerConfig config(SchedulePolicy policy, int64_t blocks = 1000, int64_t block_size = 4) {
  SchedulerConfig c;
  c.policy = policy;
  c.kv_blocks = blocks;
  c.block_size = block_size;
  c.max_num_batched_tokens = 8192;
  return c;
}

TEST(ServeEngine, VllmPrefillFirstTimeline) {
  // A (t=0, 4 prompt, 3 out); B (t=0.5, 2 prompt, 2 out).
  // it1 prefill A: 1.04 -> A token 1 at 1.04. it2 prefill B (arrived): 1.02 -> 2.06, B token 1.
  // it3 decode A,B: 1.02 -> 3.08, B done. it4 decode A: 1.01 -> 4.09, A done.
  LinearCost cost;
  auto r =
      simulate_serving({request(0, 4, 3), request(0.5, 2, 2)}, config(SchedulePolicy::vllm), cost);
  ASSERT_EQ(r.iterations.size(), 4u);
  const auto& a = r.requests[0];
  const auto& b = r.requests[1];
  EXPECT_NEAR(a.ttft_s(), 1.04, 1e-12);
  EXPECT_NEAR(a.finish_s, 4.09, 1e-12);
  EXPECT_NEAR(a.tpot_s(), (4.09 - 1.04) / 2, 1e-12);
  EXPECT_NEAR(b.ttft_s(), 2.06 - 0.5, 1e-12);
  EXPECT_NEAR(b.finish_s, 3.08, 1e-12);
  ASSERT_EQ(a.inter_token_s.size(), 2u);
  EXPECT_NEAR(a.inter_token_s[0], 3.08 - 1.04, 1e-12);  // waited through B's prefill
  EXPECT_EQ(r.iterations[1].prefill_tokens, 2);
  EXPECT_EQ(r.iterations[2].decode_seqs, 2);
  EXPECT_NEAR(r.makespan_s, 4.09, 1e-12);
}

// max_model_len 100: a request of 60 + 41 tokens is refused, 60 + 40 runs, under every policy;
// the refusal changes nothing for the others (A runs as if alone: 1.61 s of prefill, 1.01 s a
// decode under vllm).
TEST(ServeEngine, RequestsPastMaxModelLenAreRejectedUnderEveryPolicy) {
  LinearCost cost;
  for (SchedulePolicy policy : {SchedulePolicy::vllm, SchedulePolicy::chunked, SchedulePolicy::orca,
                                SchedulePolicy::static_batch}) {
    SchedulerConfig c = config(policy);
    c.max_model_len = 100;
    auto r =
        simulate_serving({request(0, 60, 41), request(0, 60, 40), request(0, 200, 1)}, c, cost);
    EXPECT_TRUE(r.requests[0].rejected);
    EXPECT_TRUE(r.requests[0].past_max_model_len);
    EXPECT_FALSE(r.requests[1].rejected);
    EXPECT_EQ(r.requests[1].output_tokens, 40);
    EXPECT_GT(r.requests[1].finish_s, 0.0);
    EXPECT_TRUE(r.requests[2].past_max_model_len);
    const ServeSummary s = summarize(r);
    EXPECT_EQ(s.rejected, 2);
    EXPECT_EQ(s.rejected_past_max_model_len, 2);
    if (policy == SchedulePolicy::vllm) {
      EXPECT_NEAR(r.requests[1].ttft_s(), 1.60, 1e-12);
      EXPECT_NEAR(r.requests[1].finish_s, 1.60 + 39 * 1.01, 1e-9);
    }
  }
  // A request that fits the cache but not max_model_len is still refused: the reason is kept.
  SchedulerConfig small = config(SchedulePolicy::chunked, 10, 4);  // 40 slots
  small.max_model_len = 30;
  auto r = simulate_serving({request(0, 50, 1), request(0, 20, 20)}, small, cost);
  EXPECT_TRUE(r.requests[0].rejected);
  EXPECT_TRUE(r.requests[0].past_max_model_len);  // both: past the length and the cache
  EXPECT_TRUE(r.requests[1].rejected);
  EXPECT_TRUE(r.requests[1].past_max_model_len);
}

// An executor's buffers hold the largest iteration a schedule can form.
TEST(ServeEngine, MaxIterationTokens) {
  SchedulerConfig c = config(SchedulePolicy::chunked);
  c.max_num_batched_tokens = 2048;
  c.max_num_seqs = 256;
  EXPECT_EQ(max_iteration_tokens(c, 100000), 2048);  // chunks never pass the budget
  c.speculative.k = 15;                              // 256 decodes of 16 tokens each
  EXPECT_EQ(max_iteration_tokens(c, 100000), 4096);
  c.speculative.k = 0;
  c.policy = SchedulePolicy::vllm;  // whole prompts: the longest, capped by max_model_len
  EXPECT_EQ(max_iteration_tokens(c, 100000), 100000);
  c.max_model_len = 8192;
  EXPECT_EQ(max_iteration_tokens(c, 100000), 8192);
  EXPECT_EQ(max_iteration_tokens(c, 1000), 2048);
}

TEST(ServeEngine, ChunkedPrefillSharesIterations) {
  // Budget 3 tokens. A (4 prompt, 2 out), B (2 prompt, 2 out), both at 0.
  // it1: A chunk 3 (budget spent) -> 1.03. it2: A's last token + B's 2 -> 2.06, both first
  // tokens. it3: decode both -> 3.08, both done.
  LinearCost cost;
  SchedulerConfig c = config(SchedulePolicy::chunked);
  c.max_num_batched_tokens = 3;
  auto r = simulate_serving({request(0, 4, 2), request(0, 2, 2)}, c, cost);
  ASSERT_EQ(r.iterations.size(), 3u);
  EXPECT_EQ(r.iterations[0].prefill_tokens, 3);
  EXPECT_EQ(r.iterations[1].prefill_tokens, 3);
  EXPECT_EQ(r.iterations[1].batch_seqs, 2);
  EXPECT_NEAR(r.requests[0].ttft_s(), 2.06, 1e-12);
  EXPECT_NEAR(r.requests[1].ttft_s(), 2.06, 1e-12);
  EXPECT_NEAR(r.requests[0].finish_s, 3.08, 1e-12);
  EXPECT_NEAR(r.requests[1].finish_s, 3.08, 1e-12);
}

TEST(ServeEngine, PreemptionByRecompute) {
  // 4 blocks of 2 tokens. A (4 prompt, 3 out) and B (3 prompt, 3 out) at 0.
  // it1 prefill both (7 tokens, 2 + 2 blocks): 1.07. it2: A needs a 3rd block, none free ->
  // B (newest) is preempted, its KV dropped; A decodes: 2.08. it3: B (now 3 + 1 tokens to
  // recompute) needs 2 blocks, 1 free -> A decodes alone: 3.09, A done, frees 3 blocks.
  // it4: B recomputes 4 tokens: 4.13, emits its 2nd token. it5: B decodes: 5.14, done.
  LinearCost cost;
  auto r = simulate_serving({request(0, 4, 3), request(0, 3, 3)},
                            config(SchedulePolicy::vllm, 4, 2), cost);
  ASSERT_EQ(r.iterations.size(), 5u);
  EXPECT_EQ(r.preemptions, 1);
  EXPECT_EQ(r.iterations[1].preemptions, 1);
  EXPECT_EQ(r.requests[1].preemptions, 1);
  EXPECT_NEAR(r.requests[0].finish_s, 3.09, 1e-12);
  EXPECT_EQ(r.iterations[3].prefill_tokens, 4);
  EXPECT_NEAR(r.requests[1].ttft_s(), 1.07, 1e-12);
  ASSERT_EQ(r.requests[1].inter_token_s.size(), 2u);
  EXPECT_NEAR(r.requests[1].inter_token_s[0], 4.13 - 1.07, 1e-12);
  EXPECT_NEAR(r.requests[1].finish_s, 5.14, 1e-12);
}

TEST(ServeEngine, SwapPreemptionMovesBlocksAndComesBack) {
  // Same as above with swap: B's 2 blocks (bytes 100 each) go out in it2 and come back once
  // A is done; no recompute, so B's prefill is not repeated.
  class SwapCost : public LinearCost {
   public:
    mutable double swapped = 0.0;
    double time_s(const IterationBatch& b) const override {
      swapped += b.swap_bytes;
      return LinearCost::time_s(b);
    }
  } cost;
  SchedulerConfig c = config(SchedulePolicy::vllm, 4, 2);
  c.preemption = PreemptionMode::swap;
  c.kv_block_bytes = 100.0;
  auto r = simulate_serving({request(0, 4, 3), request(0, 3, 3)}, c, cost);
  EXPECT_EQ(r.preemptions, 1);
  EXPECT_NEAR(cost.swapped, 400.0, 1e-9);  // 2 blocks out, 2 blocks back
  int64_t prefill = 0;
  for (const auto& it : r.iterations) prefill += it.prefill_tokens;
  EXPECT_EQ(prefill, 7);  // nothing recomputed
  EXPECT_EQ(r.requests[1].output_tokens, 3);
  EXPECT_GT(r.requests[1].finish_s, r.requests[0].finish_s);
}

TEST(ServeEngine, PrefixCacheHit) {
  // Blocks of 4; both requests start with the same 8-token prefix of their 10-token prompt.
  // A runs alone (10 tokens, 1.10 s) and registers the prefix's 2 full blocks; B arrives
  // later and computes only its last 2 tokens: TTFT 1.02 s. Hit rate 8 / 20.
  LinearCost cost;
  SchedulerConfig c = config(SchedulePolicy::vllm);
  c.prefix_caching = true;
  auto r = simulate_serving({request(0, 10, 1, 7, 8), request(5, 10, 1, 7, 8)}, c, cost);
  EXPECT_NEAR(r.requests[0].ttft_s(), 1.10, 1e-12);
  EXPECT_NEAR(r.requests[1].ttft_s(), 1.02, 1e-12);
  EXPECT_EQ(r.requests[1].prefix_hit_tokens, 8);
  EXPECT_NEAR(summarize(r).prefix_hit_rate, 0.4, 1e-12);
  // Without prefix caching B pays for its whole prompt.
  c.prefix_caching = false;
  auto plain = simulate_serving({request(0, 10, 1, 7, 8), request(5, 10, 1, 7, 8)}, c, cost);
  EXPECT_NEAR(plain.requests[1].ttft_s(), 1.10, 1e-12);
}

TEST(ServeEngine, SpeculativeStepAcceptsDrafts) {
  // k = 2, every draft accepted: after the prefill (1.04) one verify step of 3 tokens emits 3
  // (2.07), the last token needs a plain step (3.08).
  LinearCost cost;
  SchedulerConfig c = config(SchedulePolicy::vllm);
  c.speculative = {2, 1.0};
  auto r = simulate_serving({request(0, 4, 5)}, c, cost);
  ASSERT_EQ(r.iterations.size(), 3u);
  EXPECT_NEAR(r.requests[0].finish_s, 3.08, 1e-12);
  EXPECT_EQ(r.draft_tokens_proposed, 2);
  EXPECT_EQ(r.draft_tokens_accepted, 2);
  // Nothing accepted: one token per step, as without speculation but paying for 3 tokens.
  c.speculative = {2, 0.0};
  auto none = simulate_serving({request(0, 4, 5)}, c, cost);
  EXPECT_EQ(none.iterations.size(), 5u);
  EXPECT_EQ(none.draft_tokens_accepted, 0);
}

TEST(ServeEngine, SpeculativeMeanTokensPerStepMatchesTheory) {
  // Expected tokens per verify step with k drafts accepted with probability a each until the
  // first rejection: (1 - a^(k+1)) / (1 - a) = 2.7731 for k = 4, a = 0.7.
  LinearCost cost;
  SchedulerConfig c = config(SchedulePolicy::vllm, 100000, 16);
  c.speculative = {4, 0.7};
  auto r = simulate_serving({request(0, 1, 30001)}, c, cost);
  const double steps = static_cast<double>(r.iterations.size() - 1);
  EXPECT_NEAR(30000.0 / steps, (1 - std::pow(0.7, 5)) / 0.3, 0.05);
  EXPECT_NEAR(summarize(r).draft_acceptance, ((1 - std::pow(0.7, 5)) / 0.3 - 1) / 4.0,
              0.01);  // accepted share of drafts
}

TEST(ServeEngine, SpeculativeStepsVerifyOnlyWhatIsProposed) {
  // k = 4 reserved, 2 proposed a step (propose=2), all accepted: each verification is 3 tokens
  // (1.03 s) and emits 3; the 30 tokens after the prefill's first take 10 steps:
  // 1.04 + 10 x 1.03 = 11.34 s (k proposals every step: 6 steps of 1.05, 7.34 s).
  LinearCost cost;
  SchedulerConfig c = config(SchedulePolicy::vllm);
  c.speculative = {4, 1.0, 2.0};
  auto r = simulate_serving({request(0, 4, 31)}, c, cost);
  EXPECT_EQ(r.iterations.size(), 11u);
  EXPECT_NEAR(r.requests[0].finish_s, 11.34, 1e-9);
  EXPECT_EQ(r.draft_tokens_proposed, 20);
  EXPECT_EQ(r.draft_tokens_accepted, 20);
  c.speculative = {4, 1.0};
  EXPECT_NEAR(simulate_serving({request(0, 4, 31)}, c, cost).requests[0].finish_s, 7.34, 1e-9);
}

TEST(ServeEngine, AFractionalProposalLengthMixesTwoWidths) {
  // propose=2.5, nothing accepted: every step emits one token and proposes 2 or 3 with equal
  // odds, a verification of 3 or 4 tokens (1.03 or 1.04 s): 20000 steps take 20000 x 1.035 =
  // 20700 s (the draws' spread: 0.005 x sqrt(20000) = 0.7 s) and propose 50000 tokens (+-71).
  LinearCost cost;
  SchedulerConfig c = config(SchedulePolicy::vllm, 100000, 16);
  c.speculative = {4, 0.0, 2.5};
  auto r = simulate_serving({request(0, 1, 20001)}, c, cost);
  ASSERT_EQ(r.iterations.size(), 20001u);
  EXPECT_NEAR(r.requests[0].finish_s - r.requests[0].first_token_s, 20700.0, 3.0);
  EXPECT_NEAR(static_cast<double>(r.draft_tokens_proposed), 50000.0, 300.0);
  EXPECT_EQ(r.draft_tokens_accepted, 0);
}

TEST(ServeEngine, StaticBatchWaitsForTheWholeBatch) {
  // Batches of 2: A (out 3) and B (out 1) run together; C arrives at 0.1 and waits until A
  // (the longest) is done. it1 prefill A+B: 1.04; it2 decode A: 2.05; it3 decode A: 3.06;
  // it4 prefill C: 4.08.
  LinearCost cost;
  SchedulerConfig c = config(SchedulePolicy::static_batch);
  c.max_num_seqs = 2;
  auto r = simulate_serving({request(0, 2, 3), request(0, 2, 1), request(0.1, 2, 1)}, c, cost);
  EXPECT_NEAR(r.requests[1].finish_s, 1.04, 1e-12);
  EXPECT_NEAR(r.requests[0].finish_s, 3.06, 1e-12);
  EXPECT_NEAR(r.requests[2].first_token_s, 4.08, 1e-12);
}

TEST(ServeEngine, OversizedPromptIsRejectedNotRun) {
  LinearCost cost;
  auto r = simulate_serving({request(0, 100, 2), request(0, 4, 2)},
                            config(SchedulePolicy::chunked, 8, 4), cost);
  EXPECT_TRUE(r.requests[0].rejected);
  EXPECT_FALSE(r.requests[1].rejected);
  EXPECT_EQ(summarize(r).rejected, 1);
}

// Iterations of a millisecond, drafts never accepted; a run past `limit` iterations is hung.
class BoundedExecutor : public Executor {
 public:
  explicit BoundedExecutor(int64_t limit) : limit_(limit) {}
  IterationOutcome execute(const ScheduledIteration& iteration) override {
    if (++iterations_ > limit_) throw std::runtime_error("no end: a livelock");
    IterationOutcome outcome{1e-3, 1e-3, {}};
    for (const Work& w : iteration.work) outcome.advance.push_back(w.decode ? 1 : w.new_tokens);
    return outcome;
  }

 private:
  int64_t limit_, iterations_ = 0;
};

// 8 blocks of 4 (32 positions). A sequence holds at most prompt + output - 1 positions (its last
// token is never fed back): 20 + 13 fits exactly, 20 + 14 never does though its prompt does, and
// is turned away before it runs. Admitted for its prompt alone, it once ran until it filled the
// pool by itself, then by recompute was rejected with tokens out, and by swap swapped itself out
// and back in for ever. 32 + 1 fits too (the +1 of the old rule refused it).
TEST(ServeEngine, ARequestWhosePromptAndOutputCanNeverFitIsRejectedBeforeItRuns) {
  for (SchedulePolicy policy : {SchedulePolicy::vllm, SchedulePolicy::chunked}) {
    for (PreemptionMode mode : {PreemptionMode::recompute, PreemptionMode::swap}) {
      SchedulerConfig c = config(policy, 8, 4);
      c.preemption = mode;
      BoundedExecutor executor(1000);
      const auto r =
          run_serving({request(0, 20, 14), request(0, 20, 13), request(0, 32, 1), request(0, 4, 2)},
                      c, executor);
      EXPECT_TRUE(r.requests[0].rejected);
      EXPECT_FALSE(r.requests[0].past_max_model_len);
      EXPECT_LT(r.requests[0].first_token_s, 0.0);  // never ran
      for (size_t i = 1; i < 4; ++i) {
        EXPECT_FALSE(r.requests[i].rejected) << i;
        EXPECT_GT(r.requests[i].finish_s, 0.0) << i;
      }
      EXPECT_EQ(summarize(r).rejected, 1);
    }
  }
}

TEST(ServeMetrics, PercentilesByHand) {
  // numpy.percentile([1, 2, 3, 4], 90) = 3.7.
  EXPECT_NEAR(percentile({4, 1, 3, 2}, 90), 3.7, 1e-12);
  EXPECT_NEAR(percentile({4, 1, 3, 2}, 50), 2.5, 1e-12);
  auto s = latency_stats({1, 2, 3, 4});
  EXPECT_NEAR(s.mean_s, 2.5, 1e-12);
  EXPECT_NEAR(s.max_s, 4.0, 1e-12);
}

}  // namespace
}  // namespace inferlab
