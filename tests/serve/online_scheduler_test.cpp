// The scheduler as the server uses it: requests join while it runs, end early, and prompts with
// the same leading tokens share their cached blocks through the hash chain of block keys.
#include <gtest/gtest.h>

#include <numeric>

#include "serve/block_keys.hpp"
#include "serve/scheduler.hpp"

namespace inferlab {
namespace {

TEST(BlockKeys, HashChainOverFullBlocks) {
  std::vector<int32_t> a(8), b(8);
  std::iota(a.begin(), a.end(), 1);
  b = a;
  b[6] = 99;  // second block differs
  const auto ka = token_block_keys(a, 4), kb = token_block_keys(b, 4);
  ASSERT_EQ(ka.size(), 2u);
  EXPECT_EQ(ka[0], kb[0]);
  EXPECT_NE(ka[1], kb[1]);
  EXPECT_EQ(token_block_keys(std::span(a).first(7), 4).size(), 1u);  // a partial block has none
  std::vector<int32_t> c = a;
  c[0] = 42;  // first block differs, second block's tokens the same: the chain tells them apart
  const auto kc = token_block_keys(c, 4);
  EXPECT_NE(kc[0], ka[0]);
  EXPECT_NE(kc[1], ka[1]);
  const auto p5 = prefix_block_keys(5, 3), p6 = prefix_block_keys(6, 3);
  EXPECT_EQ(prefix_block_keys(5, 2), std::vector<uint64_t>(p5.begin(), p5.begin() + 2));
  EXPECT_NE(p5[0], p6[0]);
}

// One iteration the way the engine loop runs it: 1 ms per forward pass, no drafts.
void step(Scheduler& s, double& now) {
  ScheduledIteration it = s.schedule();
  IterationOutcome outcome{1e-3, {}};
  for (const Work& w : it.work) outcome.advance.push_back(w.decode ? 1 : w.new_tokens);
  now += 1e-3;
  s.update(it, outcome, now);
  ASSERT_EQ(s.blocks().consistency_error(), "");
}

TEST(OnlineScheduler, RequestsJoinRunEndEarlyAndShareCachedPrefixes) {
  SchedulerConfig config;
  config.policy = SchedulePolicy::chunked;
  config.block_size = 4;
  config.kv_blocks = 32;
  config.max_num_batched_tokens = 64;
  config.prefix_caching = true;
  const std::vector<ServeRequest> none;
  Scheduler s(none, config);
  std::vector<int32_t> prompt(10);
  std::iota(prompt.begin(), prompt.end(), 100);
  ServeRequest r;
  r.prompt_tokens = 10;
  r.output_tokens = 5;
  r.block_keys = token_block_keys(prompt, 4);  // 2 full blocks
  double now = 0;
  const int64_t first = s.add(r, now);
  EXPECT_EQ(first, 0);
  step(s, now);  // the whole prompt and its first token
  EXPECT_EQ(s.outcome(first).first_token_s, now);
  const int64_t second = s.add(r, now);  // the same prompt, joining mid-run
  step(s, now);
  // The second reuses the first's two full blocks: 8 of its 10 prompt tokens.
  EXPECT_EQ(s.outcome(second).prefix_hit_tokens, 8);
  s.end_early(first, now);  // a stop token, or its client went away
  EXPECT_TRUE(s.is_finished(first));
  EXPECT_TRUE(s.outcome(first).ended_early);
  EXPECT_EQ(s.outcome(first).output_tokens, 2);
  EXPECT_EQ(s.blocks().consistency_error(), "");
  while (!s.is_finished(second)) step(s, now);
  EXPECT_EQ(s.outcome(second).output_tokens, 5);
  EXPECT_FALSE(s.outcome(second).ended_early);
  EXPECT_TRUE(s.finished());
  EXPECT_EQ(s.running_count(), 0);
  // Nothing is held; the prefix blocks stay cached but count as free.
  EXPECT_EQ(s.blocks().used_blocks(), 0);
  s.end_early(second, now);  // no effect on a finished one
  EXPECT_FALSE(s.outcome(second).ended_early);
  // Forgetting lets go of a request's state once those before it are gone too.
  EXPECT_EQ(s.held_requests(), 2);
  s.forget(second);
  EXPECT_EQ(s.held_requests(), 2);  // the first is still held
  s.forget(first);
  EXPECT_EQ(s.held_requests(), 0);
  const int64_t third = s.add(r, now);
  EXPECT_EQ(third, 2);  // ids keep counting
  step(s, now);
  EXPECT_EQ(s.outcome(third).prefix_hit_tokens, 8);  // the cache outlives the requests
}

// A long prompt waits until all of it fits. Admitted for its first chunk alone into a pool the
// first request fills, it would grow until it evicted itself, start again and evict itself
// again until the first request ended (by hand: 16 blocks of 4; the first holds 8 blocks for
// its prompt and grows to 13; the second needs 10 for its prompt).
TEST(OnlineScheduler, ALongPromptWaitsUntilAllOfItFits) {
  SchedulerConfig config;
  config.policy = SchedulePolicy::chunked;
  config.block_size = 4;
  config.kv_blocks = 16;
  config.max_num_batched_tokens = 8;
  const std::vector<ServeRequest> none;
  Scheduler s(none, config);
  ServeRequest first, second;
  first.prompt_tokens = 32;
  first.output_tokens = 20;
  second.prompt_tokens = 40;
  second.output_tokens = 10;
  double now = 0;
  const int64_t a = s.add(first, now), b = s.add(second, now);
  int64_t iterations = 0;
  while (!s.finished() && iterations < 1000) {
    step(s, now);
    ++iterations;
    if (!s.is_finished(a)) {
      EXPECT_EQ(s.running_count(), 1) << "iteration " << iterations;
    }
  }
  EXPECT_TRUE(s.finished());
  EXPECT_EQ(s.result_so_far().preemptions, 0);
  EXPECT_GT(s.outcome(b).first_token_s, s.outcome(a).finish_s);
  // The first: 4 chunks of 8 and 19 decodes; the second: 5 chunks of 8 and 9 decodes.
  EXPECT_EQ(iterations, 4 + 19 + 5 + 9);
}

}  // namespace
}  // namespace inferlab
