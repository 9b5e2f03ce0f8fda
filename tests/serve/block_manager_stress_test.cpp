// The block manager's invariants under random operations, and after every iteration of the
// scheduler on random workloads with small caches (preemption, prefix caching, every policy).
#include <gtest/gtest.h>

#include <random>

#include "serve/block_keys.hpp"
#include "serve/block_manager.hpp"
#include "serve/executor.hpp"
#include "serve/serving_loop.hpp"

namespace inferlab {
namespace {

TEST(BlockManagerStress, RandomOperationsKeepTheBookkeeping) {
  std::mt19937_64 rng(42);
  BlockManager blocks(40, 4, /*prefix_caching=*/true);
  std::vector<int64_t> live;
  std::vector<int64_t> prefix_of;  // per sequence id
  int64_t next_seq = 0;
  for (int step = 0; step < 20000; ++step) {
    const int op = static_cast<int>(rng() % 4);
    if (op == 0 || live.empty()) {  // a new sequence, maybe with a shared prefix
      const int64_t seq = next_seq++;
      const int64_t prefix = static_cast<int64_t>(rng() % 4) - 1;  // -1: none
      prefix_of.push_back(prefix);
      blocks.acquire_prefix(seq,
                            prefix >= 0 ? prefix_block_keys(prefix, 3) : std::vector<uint64_t>{});
      live.push_back(seq);
    } else if (op <= 2) {  // grow and compute
      const int64_t seq = live[rng() % live.size()];
      const int64_t tokens = blocks.held_blocks(seq) * 4 + static_cast<int64_t>(rng() % 9);
      if (blocks.grow(seq, tokens)) {
        const int64_t prefix = prefix_of[static_cast<size_t>(seq)];
        blocks.mark_computed(seq, tokens,
                             prefix >= 0 ? prefix_block_keys(prefix, 3) : std::vector<uint64_t>{});
      }
    } else {  // release
      const size_t i = rng() % live.size();
      blocks.release(live[i]);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    }
    const std::string error = blocks.consistency_error();
    ASSERT_EQ(error, "") << "after step " << step;
    ASSERT_EQ(blocks.free_blocks() + blocks.used_blocks(), 40);
  }
  EXPECT_GT(blocks.evictions(), 0);
}

// Checks the block manager before every iteration; iterations take 1 ms, drafts never accepted.
class CheckingExecutor : public Executor {
 public:
  IterationOutcome execute(const ScheduledIteration& iteration) override {
    const std::string error = iteration.blocks->consistency_error();
    if (!error.empty()) ADD_FAILURE() << error;
    IterationOutcome outcome{1e-3, {}};
    for (const Work& w : iteration.work) outcome.advance.push_back(w.decode ? 1 : w.new_tokens);
    ++iterations;
    return outcome;
  }
  int64_t iterations = 0;
};

TEST(BlockManagerStress, SchedulerKeepsTheInvariantsUnderPressure) {
  std::mt19937_64 rng(7);
  for (SchedulePolicy policy : {SchedulePolicy::vllm, SchedulePolicy::chunked, SchedulePolicy::orca,
                                SchedulePolicy::static_batch}) {
    for (bool prefix : {false, true}) {
      std::vector<ServeRequest> requests;
      for (int i = 0; i < 200; ++i) {
        const int64_t group = static_cast<int64_t>(rng() % 3) - 1;
        requests.push_back({0.0005 * i, 8 + static_cast<int64_t>(rng() % 120),
                            1 + static_cast<int64_t>(rng() % 40), group, group >= 0 ? 32 : 0});
      }
      SchedulerConfig config;
      config.policy = policy;
      config.block_size = 8;
      config.kv_blocks = 48;
      config.max_num_batched_tokens = 96;
      config.prefix_caching = prefix;
      CheckingExecutor executor;
      const ServeResult result = run_serving(requests, config, executor);
      int64_t finished = 0;
      for (const auto& r : result.requests) finished += r.finish_s >= 0 || r.rejected;
      EXPECT_EQ(finished, 200) << schedule_policy_name(policy);
      EXPECT_GT(executor.iterations, 0);
      if (policy == SchedulePolicy::vllm || policy == SchedulePolicy::chunked) {
        EXPECT_GT(result.preemptions, 0) << "the cache should be under pressure";
      }
      if (prefix && policy != SchedulePolicy::orca && policy != SchedulePolicy::static_batch) {
        EXPECT_GT(result.prefix_hit_tokens, 0);
      }
    }
  }
}

}  // namespace
}  // namespace inferlab
