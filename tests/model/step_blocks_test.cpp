#include "model/step_blocks.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace inferlab {
namespace {

// Single blocks run on their own, pinned by hand-worked shapes, FLOPs and bytes.

std::vector<std::string> names(const std::vector<Op>& ops) {
  std::vector<std::string> out;
  for (const auto& op : ops) out.emplace_back(op.name);
  return out;
}

// One MoE MLP block of Mixtral 8x7B for 4 tokens: 8 token-expert rows over
// 8 (1 - (6/8)^4) = 5.46875 experts expected hit, so 2 rows per expert in 6 groups.
TEST(StepBlocks, MixtralMoeMlpBlockOfFourTokens) {
  ModelConfig m = load_model("mixtral-8x7b");
  const StepShape shape{Phase::prefill, 1, 4, 4};
  const Precision p;
  const KernelPlan plan;
  const ShardDims s = shard_dims(m, 1);
  std::vector<Op> ops;
  StepBuilder b(m, shape, p, plan, s, NormKind::rms, ops);
  moe_mlp_block(b);
  ASSERT_EQ(names(ops), (std::vector<std::string>{"router", "experts_gate_up", "silu_mul",
                                                  "experts_down", "mlp_add_next_norm"}));
  for (const auto& op : ops) EXPECT_EQ(op.count, 32);
  const Op& router = ops[0];
  EXPECT_EQ(router.kind, OpKind::gemm);
  EXPECT_DOUBLE_EQ(router.flops, 2.0 * 4 * 8 * 4096);
  EXPECT_DOUBLE_EQ(router.weight_bytes, 8.0 * 4096 * 2);
  const Op& up = ops[1];
  EXPECT_EQ(up.kind, OpKind::moe_gemm);
  EXPECT_EQ(up.gemm.m, 2);
  EXPECT_EQ(up.gemm.n, 2 * 14336);
  EXPECT_EQ(up.gemm.k, 4096);
  EXPECT_EQ(up.gemm.groups, 6);
  EXPECT_DOUBLE_EQ(up.flops, 1'879'048'192.0);         // 2 x 8 x 28672 x 4096
  EXPECT_DOUBLE_EQ(up.weight_bytes, 1'284'505'600.0);  // 28672 x 4096 x 2 B x 5.46875
  EXPECT_DOUBLE_EQ(up.activation_bytes, 8.0 * (4096 + 28672) * 2);
  EXPECT_DOUBLE_EQ(ops[2].flops, 6.0 * 8 * 14336);  // SiLU x up on the 8 rows
  EXPECT_DOUBLE_EQ(ops[2].activation_bytes, 3.0 * 8 * 14336 * 2);
  const Op& down = ops[3];
  EXPECT_EQ(down.gemm.m, 2);
  EXPECT_EQ(down.gemm.groups, 6);
  EXPECT_DOUBLE_EQ(down.flops, 939'524'096.0);         // 2 x 8 x 4096 x 14336
  EXPECT_DOUBLE_EQ(down.weight_bytes, 642'252'800.0);  // 4096 x 14336 x 2 B x 5.46875
  EXPECT_EQ(ops[4].kind, OpKind::add_rmsnorm);
  EXPECT_DOUBLE_EQ(ops[4].flops, 5.0 * 4 * 4096);
}

// gpt-fast's layout: one gate/up GEMM, then SiLU and mul apart on the halves of its output
// (strided views); the plain PyTorch plan's SiLU and mul read contiguous tensors.
TEST(StepBlocks, UnfusedSiluMulOnFusedGateUpReadsStridedViews) {
  ModelConfig m = load_model("llama-3.2-1b");
  const StepShape shape{Phase::prefill, 1, 16, 16};
  const Precision p;
  KernelPlan plan;
  plan.fuse_silu_mul = false;
  plan.fuse_add_rmsnorm = false;
  const ShardDims s = shard_dims(m, 1);
  for (bool fused_gate_up : {true, false}) {
    plan.fuse_gate_up = fused_gate_up;
    std::vector<Op> ops;
    StepBuilder b(m, shape, p, plan, s, NormKind::rms, ops);
    gated_mlp_block(b);
    const size_t silu = fused_gate_up ? 2 : 3;
    ASSERT_EQ(std::string(ops[silu].name), "silu");
    EXPECT_EQ(ops[silu].strided_input, fused_gate_up);
    EXPECT_EQ(ops[silu + 1].strided_input, fused_gate_up);
    EXPECT_FALSE(ops[silu + 2].strided_input);  // down_proj
  }
}

// One GELU MLP block of GPT-3 175B for a decode batch of 8, eager plan: LayerNorm, biased
// fc_in (12288 -> 49152), GELU, biased fc_out, residual add.
TEST(StepBlocks, Gpt3GeluMlpBlockOfEightTokens) {
  ModelConfig m = load_model("gpt3-175b");
  const StepShape shape{Phase::decode, 8, 1, 1024};
  const Precision p;
  KernelPlan eager;
  eager.fuse_add_rmsnorm = false;
  const ShardDims s = shard_dims(m, 1);
  std::vector<Op> ops;
  StepBuilder b(m, shape, p, eager, s, NormKind::layer, ops);
  gelu_mlp_block(b);
  ASSERT_EQ(names(ops), (std::vector<std::string>{"post_attn_norm", "fc_in", "gelu", "fc_out",
                                                  "mlp_residual_add"}));
  EXPECT_EQ(ops[0].kind, OpKind::layernorm);
  EXPECT_DOUBLE_EQ(ops[0].flops, 7.0 * 8 * 12288);         // RMS work + mean, centre, bias
  EXPECT_DOUBLE_EQ(ops[0].weight_bytes, 2.0 * 12288 * 2);  // scale and bias
  EXPECT_EQ(ops[1].gemm.n, 49152);
  EXPECT_DOUBLE_EQ(ops[1].flops, 9'664'069'632.0);         // 2 x 8 x 49152 x 12288 + bias
  EXPECT_DOUBLE_EQ(ops[1].weight_bytes, 1'208'057'856.0);  // weights + bias, 2 B each
  EXPECT_EQ(ops[2].kind, OpKind::gelu);
  EXPECT_DOUBLE_EQ(ops[2].flops, 5.0 * 8 * 49152);
  EXPECT_DOUBLE_EQ(ops[2].activation_bytes, 2.0 * 8 * 49152 * 2);
  EXPECT_EQ(ops[3].gemm.k, 49152);
  EXPECT_DOUBLE_EQ(ops[3].flops, 9'663'774'720.0);  // 2 x 8 x 12288 x 49152 + bias
  EXPECT_DOUBLE_EQ(ops[3].weight_bytes, 1'207'984'128.0);
  EXPECT_EQ(ops[4].kind, OpKind::add);
}

// GPT-3's embedding gathers token and position rows; its attention has no RoPE and a biased
// output projection; 8-way tensor parallelism adds the all-reduce after it.
TEST(StepBlocks, Gpt3EmbeddingAndAttentionBlocks) {
  ModelConfig m = load_model("gpt3-175b");
  const StepShape shape{Phase::decode, 2, 1, 2048};
  const Precision p;
  const KernelPlan plan;
  const ShardDims s = shard_dims(m, 8);
  std::vector<Op> ops;
  StepBuilder b(m, shape, p, plan, s, NormKind::layer, ops);
  token_position_embedding_block(b);
  ASSERT_EQ(names(ops), (std::vector<std::string>{"embedding", "embedding_all_reduce"}));
  EXPECT_DOUBLE_EQ(ops[0].weight_bytes, 2.0 * 2 * 12288 * 2);  // token and position rows
  ops.clear();
  learned_position_attention_block(b);
  ASSERT_EQ(names(ops),
            (std::vector<std::string>{"input_norm", "qkv_proj", "kv_write", "attention", "o_proj",
                                      "attn_all_reduce", "post_attn_add_norm"}));
  EXPECT_EQ(ops[0].kind, OpKind::layernorm);
  EXPECT_EQ(ops[1].gemm.n, 3 * 12 * 128);  // 96 heads over 8 devices, q k v
  EXPECT_DOUBLE_EQ(ops[4].flops, 2.0 * 2 * 12288 * 1536 + 2.0 * 12288);  // biased o_proj
  EXPECT_DOUBLE_EQ(ops[5].comm_bytes, 2.0 * 12288 * 2);
  EXPECT_EQ(ops[5].comm_devices, 8);
  EXPECT_EQ(ops[6].kind, OpKind::add_layernorm);
}

// The head of a decode batch of 4: LM head on 4 rows of the (sharded) vocabulary, then
// sampling over the whole vocabulary.
TEST(StepBlocks, HeadBlockOfLlama) {
  ModelConfig m = load_model("llama-3-8b");
  const StepShape shape{Phase::decode, 4, 1, 100};
  const Precision p;
  const KernelPlan plan;
  const ShardDims s = shard_dims(m, 2);
  std::vector<Op> ops;
  StepBuilder b(m, shape, p, plan, s, NormKind::rms, ops);
  head_block(b);
  ASSERT_EQ(names(ops), (std::vector<std::string>{"lm_head", "logits_all_gather", "sampling"}));
  EXPECT_EQ(ops[0].gemm.m, 4);
  EXPECT_EQ(ops[0].gemm.n, 128256 / 2);
  EXPECT_DOUBLE_EQ(ops[0].flops, 2.0 * 4 * 64128 * 4096);
  EXPECT_DOUBLE_EQ(ops[1].comm_bytes, 4.0 * 64128 * 2);
  EXPECT_DOUBLE_EQ(ops[2].flops, 4.0 * 128256);
  for (const auto& op : ops) EXPECT_EQ(op.scope, Scope::post_layers);
}

}  // namespace
}  // namespace inferlab
