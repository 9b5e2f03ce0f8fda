// The bench's statistics, worked by hand, and a whole bench run on the CPU reference.
#include "engine/engine_bench.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/cpu/cpu_backend.hpp"
#include "engine/engine_profile.hpp"
#include "engine/init_weights.hpp"
#include "util/error.hpp"

namespace inferlab::engine {
namespace {

TEST(EngineBench, TimingStatsInterpolateQuantilesLikeNumpy) {
  // Sorted: 1 2 3 4 10. Median 3; p10 at rank 0.4 → 1.4; p90 at rank 3.6 → 4 + 0.6·6 = 7.6.
  const TimingStats s = timing_stats({10, 2, 4, 1, 3});
  EXPECT_DOUBLE_EQ(s.median_s, 3);
  EXPECT_DOUBLE_EQ(s.p10_s, 1.4);
  EXPECT_DOUBLE_EQ(s.p90_s, 7.6);
  EXPECT_DOUBLE_EQ(s.mean_s, 4);
  EXPECT_DOUBLE_EQ(s.min_s, 1);
  EXPECT_DOUBLE_EQ(s.max_s, 10);
  EXPECT_EQ(s.samples, 5);
  EXPECT_EQ(timing_stats({}).samples, 0);
  EXPECT_DOUBLE_EQ(timing_stats({2.5}).p90_s, 2.5);
}

LlamaConfig tiny() {
  nlohmann::json j = {{"architectures", {"LlamaForCausalLM"}},
                      {"model_type", "llama"},
                      {"hidden_size", 16},
                      {"intermediate_size", 32},
                      {"num_hidden_layers", 1},
                      {"num_attention_heads", 2},
                      {"num_key_value_heads", 1},
                      {"head_dim", 8},
                      {"vocab_size", 50},
                      {"max_position_embeddings", 40}};
  return parse_llama_config(j, "tiny", "test");
}

TEST(EngineBench, RunsEveryStepAndDerivesTheSummary) {
  const LlamaConfig config = tiny();
  CpuBackend backend(config, random_llama_weights(config, 1), 4, 12);
  BenchOptions o;
  o.batch = 3;
  o.input_tokens = 6;
  o.output_tokens = 4;
  o.repeats = 2;
  o.profile_kernels = false;
  const BenchResult r = run_engine_bench(backend, o);
  EXPECT_FALSE(r.device_timed);
  EXPECT_EQ(r.prefill.samples, 2);
  EXPECT_EQ(r.decode_step.samples, 3);  // output − 1
  EXPECT_DOUBLE_EQ(r.ttft_s, r.prefill.median_s);
  EXPECT_DOUBLE_EQ(r.tpot_s, r.decode_step.mean_s);
  EXPECT_DOUBLE_EQ(r.e2e_s, r.ttft_s + 3 * r.tpot_s);
  EXPECT_DOUBLE_EQ(r.decode_tokens_per_s, 3 / r.tpot_s);
  EXPECT_EQ(r.kv_cache_tokens, 48);
  // 3 sequences × 10 tokens need 3 × 3 blocks of 4 ≤ 12; 4 sequences would need 12, 5 do not fit.
  o.batch = 5;
  EXPECT_THROW(run_engine_bench(backend, o), InputError);
  o.batch = 1;
  o.input_tokens = 38;  // 38 + 4 > the 40-token context
  EXPECT_THROW(run_engine_bench(backend, o), InputError);
}

// The long-context grid: 7 decode contexts x 4 batches and 6 prefill chunks after a cached
// prefix, every third held out; each point kept only where the model's context, the pool and the
// batch limits allow it.
TEST(EngineProfile, TheLongContextGridKeepsToTheLimits) {
  const auto all = profile_grid(131072, 1 << 24, 8192, 64, 16, ProfileGrid::long_context);
  ASSERT_EQ(all.size(), 34u);
  int prefills = 0, held = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const ProfilePoint& p = all[i];
    EXPECT_EQ(p.holdout, i % 3 == 2) << i;
    held += p.holdout;
    if (p.prefill) {
      ++prefills;
      EXPECT_EQ(p.batch, 1);
      EXPECT_GT(p.context, p.tokens);  // a chunk after a cached prefix
    } else {
      EXPECT_EQ(p.tokens, 1);
    }
  }
  EXPECT_EQ(prefills, 6);
  EXPECT_EQ(held, 11);
  EXPECT_EQ(all.back().context, 131000);
  // Llama 3 8B's 8192-token context keeps the decode points of context 6000 (and 64 steps) only.
  const auto short_model = profile_grid(8192, 1 << 24, 8192, 64, 16, ProfileGrid::long_context);
  ASSERT_EQ(short_model.size(), 4u);
  for (const ProfilePoint& p : short_model) EXPECT_EQ(p.context, 6000);
  // The pool holds its largest decode point: 16 sequences of 65536 + 64 steps + 16 (80 blocks
  // more than a pool of exactly 16 x 65536 tokens).
  EXPECT_EQ(profile_kv_tokens(7, ProfileGrid::long_context), 16 * (65536 + 64 + 16));
  EXPECT_EQ(profile_max_batch_tokens(ProfileGrid::long_context), 8192);
  EXPECT_EQ(profile_max_batch_tokens(ProfileGrid::standard), 4096);
}

// The large-batch grid: 6 prefills of up to 32768 tokens a pass and 3 decode batches, the held-out
// third points 32 × 1024, 4 × 2048 and 256 sequences; the pool holds 256 sequences of 1024 + the
// steps; a limit of 64 sequences leaves the decode points out.
TEST(EngineProfile, TheLargeBatchGridHoldsOutItsOwnShapes) {
  const auto all = profile_grid(40960, 1 << 24, 32768, 256, 16, ProfileGrid::large_batch);
  ASSERT_EQ(all.size(), 9u);
  std::vector<std::pair<int64_t, int64_t>> held;
  for (const ProfilePoint& p : all) {
    if (p.holdout) held.emplace_back(p.batch, p.tokens);
  }
  EXPECT_EQ(held, (std::vector<std::pair<int64_t, int64_t>>{{32, 1024}, {4, 2048}, {256, 1}}));
  EXPECT_EQ(profile_max_batch_tokens(ProfileGrid::large_batch), 32768);
  EXPECT_EQ(profile_max_sequences(ProfileGrid::large_batch), 256);
  EXPECT_EQ(profile_kv_tokens(7, ProfileGrid::large_batch), 256 * (1024 + 64 + 16));
  EXPECT_EQ(profile_grid(40960, 1 << 24, 32768, 64, 16, ProfileGrid::large_batch).size(), 6u);
}

}  // namespace
}  // namespace inferlab::engine
