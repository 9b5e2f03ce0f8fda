#include "model/footprint.hpp"

#include <gtest/gtest.h>

namespace inferlab {
namespace {

Precision bf16() {
  return Precision{};
}

// 8,030,261,248 parameters x 2 bytes = 16,060,522,496 bytes (16.06 GB), LM head included.
TEST(Footprint, Llama3_8BWeightsInBf16) {
  ModelConfig m = load_model("llama-3-8b");
  EXPECT_DOUBLE_EQ(weight_bytes_per_device(m, bf16(), shard_dims(m, 1)), 16'060'522'496.0);
}

// 2 (K and V) x 32 layers x 8 KV heads x 128 x 2 bytes = 131,072 bytes = 128 KiB per token.
TEST(Footprint, Llama3_8BKvBytesPerToken) {
  ModelConfig m = load_model("llama-3-8b");
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::bf16, shard_dims(m, 1)), 131072.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::fp8, shard_dims(m, 1)), 65536.0);
}

// 2 FLOPs per MAC over the layers' parameters and the LM head (not the embedding gather):
// 2 x (6,979,584,000 + 4096 + 525,336,576) = 15,009,849,344.
TEST(Footprint, Llama3_8BFlopsPerToken) {
  EXPECT_DOUBLE_EQ(dense_flops_per_token(load_model("llama-3-8b")), 15'009'849'344.0);
}

// int4 weight-only with group 128: 0.5 + 2/128 bytes per linear weight; embeddings, LM head and
// norms stay bf16.
TEST(Footprint, Int4WeightOnly) {
  ModelConfig m = load_model("llama-3-8b");
  Precision p;
  p.weights = DType::int4;
  double linear = 32.0 * 218'103'808.0;  // per layer: 218,112,000 less the 8192 norm weights
  double expected =
      linear * (0.5 + 2.0 / 128.0) + 2.0 * 525'336'576.0 * 2.0 + (32.0 * 8192.0 + 4096.0) * 2.0;
  EXPECT_DOUBLE_EQ(weight_bytes_per_device(m, p, shard_dims(m, 1)), expected);
}

// TP 4 on 70B: linear layers split 4 ways, vocab rows split 4 ways, norms replicated.
TEST(Footprint, TensorParallelSharding) {
  ModelConfig m = load_model("llama-3-70b");
  ShardDims s = shard_dims(m, 4);
  EXPECT_EQ(s.q_heads, 16);
  EXPECT_EQ(s.kv_heads, 2);
  EXPECT_EQ(s.intermediate, 7168);
  EXPECT_EQ(s.vocab, 32064);
  double one = weight_bytes_per_device(m, bf16(), shard_dims(m, 1));
  double four = weight_bytes_per_device(m, bf16(), s);
  double replicated_norms = (80.0 * 2.0 * 8192.0 + 8192.0) * 2.0;
  EXPECT_NEAR(four, (one - replicated_norms) / 4.0 + replicated_norms, 1.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::bf16, s), 2.0 * 80 * 2 * 128 * 2);
}

}  // namespace
}  // namespace inferlab
