// The flash-decode kernel's split plan, worked by hand (Llama 3 8B's 32 query and 8 KV heads on
// an H200's 132 SMs); the launcher and the simulator share it.
#include "model/engine_decode_plan.hpp"

#include <gtest/gtest.h>

namespace inferlab {
namespace {

TEST(EngineDecodePlan, GraphBucketsArePowersOfTwoFrom256) {
  EXPECT_EQ(graph_context_bucket(1), 256);
  EXPECT_EQ(graph_context_bucket(256), 256);
  EXPECT_EQ(graph_context_bucket(257), 512);
  EXPECT_EQ(graph_context_bucket(8192), 8192);
  EXPECT_EQ(graph_context_bucket(120001), 131072);
}

TEST(EngineDecodePlan, SplitsFillTheSmsFromTheBatchsMaxima) {
  // Batch 1 at 1024: 8 CTAs (a head tile of 4 covers each KV head's 4 query heads); 2 x 132 / 8
  // = 33 splits wanted, 1024 / 64 = 16 allowed: 16 splits of 64 positions.
  DecodeSplitPlan p = decode_split_plan(1, 32, 8, 132, 1024, kDecodeMaxSplits);
  EXPECT_EQ(p.ctas, 8);
  EXPECT_EQ(p.splits, 16);
  EXPECT_EQ(p.partition, 64);
  // Batch 16 (a graph's padded rows) with a sequence at 40,000: 128 CTAs, ceil(264 / 128) = 3
  // splits of the 65536 bound: 21846 positions each, however short the other sequences are.
  p = decode_split_plan(16, 32, 8, 132, 40000, kDecodeMaxSplits);
  EXPECT_EQ(p.ctas, 128);
  EXPECT_EQ(p.splits, 3);
  EXPECT_EQ(p.partition, 21846);
  // Batch 17: 136 CTAs, one per SM already: no split.
  p = decode_split_plan(17, 32, 8, 132, 40000, kDecodeMaxSplits);
  EXPECT_EQ(p.splits, 1);
  EXPECT_EQ(p.partition, 65536);
  // The workspace caps the splits: 4 at most, so 65536 / 4.
  p = decode_split_plan(1, 32, 8, 132, 65536, 4);
  EXPECT_EQ(p.splits, 4);
  EXPECT_EQ(p.partition, 16384);
}

}  // namespace
}  // namespace inferlab
