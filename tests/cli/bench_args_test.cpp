// `bench`'s prediction beside a measurement (cli/bench_args.hpp) prices what its engine ran: the
// RoPE epilogue's switch (INFERLAB_ENGINE_ROPE_IN_QKV, EngineTuning::rope_in_qkv) and the flash
// decode's early cache reads (INFERLAB_ENGINE_EARLY_CACHE, AttentionTuning::cache_before_wait)
// reach the profile's switches and the prediction's options alike.
#include "cli/bench_args.hpp"

#include <gtest/gtest.h>

namespace inferlab::cli {
namespace {

TEST(BenchArgs, TheRopeEpilogueSwitchReachesTheProfileAndThePrediction) {
  BenchArgs a;
  a.model = "llama-3-8b";
  for (bool rope_in_qkv : {true, false}) {
    EngineOptions options;
    options.tuning.rope_in_qkv = rope_in_qkv;
    EXPECT_EQ(engine_switches_of(options).rope_in_qkv, rope_in_qkv);
    EXPECT_EQ(engine_switches_json(engine_switches_of(options))["rope"],
              rope_in_qkv ? "qkv_epilogue" : "kernel");
    const CommonArgs common = predict_args_for(a, options, "h200");
    EXPECT_EQ(common.rope_in_qkv, rope_in_qkv);
    EXPECT_EQ(to_predict_options(common).rope_in_qkv, rope_in_qkv);
  }
}

TEST(BenchArgs, TheEarlyCacheReadsSwitchReachesTheProfileAndThePrediction) {
  BenchArgs a;
  a.model = "llama-3-8b";
  for (bool early : {true, false}) {
    EngineOptions options;
    options.tuning.attention.cache_before_wait = early;
    EXPECT_EQ(engine_switches_of(options).early_cache_reads, early);
    EXPECT_EQ(engine_switches_json(engine_switches_of(options))["decode_cache"],
              early ? "early" : "after_wait");
    const CommonArgs common = predict_args_for(a, options, "h200");
    EXPECT_EQ(common.early_cache_reads, early);
    EXPECT_EQ(to_predict_options(common).early_cache_reads, early);
  }
  // Where the engine would not read early whatever the switch: no programmatic launch, the
  // chunked kernel forced, blocks the streamed kernel does not take.
  EngineOptions no_pdl;
  no_pdl.tuning.attention.programmatic_launch = false;
  EXPECT_FALSE(engine_switches_of(no_pdl).early_cache_reads);
  EngineOptions chunked;
  chunked.tuning.attention.decode_kernel = engine::DecodeKernelChoice::chunked;
  EXPECT_FALSE(engine_switches_of(chunked).early_cache_reads);
  EngineOptions blocks_of_8;
  blocks_of_8.block_size = 8;
  EXPECT_FALSE(engine_switches_of(blocks_of_8).early_cache_reads);
}

}  // namespace
}  // namespace inferlab::cli
