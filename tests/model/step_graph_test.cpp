#include "model/step_graph.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/model_family.hpp"
#include "model/op_builders.hpp"
#include "model/step_blocks.hpp"
#include "util/error.hpp"

namespace inferlab {
namespace {

const Op* find(const std::vector<Op>& ops, const char* name) {
  for (const auto& op : ops) {
    if (std::strcmp(op.name, name) == 0) return &op;
  }
  return nullptr;
}

TEST(StepGraph, VllmDecodeOperatorsOf8B) {
  ModelConfig m = load_model("llama-3-8b");
  std::vector<Op> ops;
  build_step_graph(m, {Phase::decode, 1, 1, 1024}, Precision{}, KernelPlan{}, shard_dims(m, 1),
                   ops);
  const Op* qkv = find(ops, "qkv_proj");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->count, 32);
  EXPECT_EQ(qkv->gemm.m, 1);
  EXPECT_EQ(qkv->gemm.n, 4096 + 2 * 1024);
  EXPECT_EQ(qkv->gemm.k, 4096);
  EXPECT_DOUBLE_EQ(qkv->weight_bytes, 6144.0 * 4096 * 2);
  const Op* attn = find(ops, "attention");
  ASSERT_NE(attn, nullptr);
  // 1024 cached tokens x 8 KV heads x 128 x 2 bytes, K and V.
  EXPECT_DOUBLE_EQ(attn->kv_bytes, 2.0 * 1024 * 8 * 128 * 2);
  EXPECT_DOUBLE_EQ(attn->flops, 4.0 * 32 * 128 * 1024);
  const Op* head = find(ops, "lm_head");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->gemm.m, 1);  // last token only
  EXPECT_EQ(head->gemm.n, 128256);
  // Every parameter but the embedding table is streamed once per decode step.
  double weights = 0;
  for (const auto& op : ops) weights += op.weight_bytes * op.count;
  EXPECT_NEAR(weights, 16'060'522'496.0 - 525'336'576.0 * 2, 1e5);
}

TEST(StepGraph, PrefillLmHeadOnLastTokensOnly) {
  ModelConfig m = load_model("llama-3.2-1b");
  std::vector<Op> ops;
  build_step_graph(m, {Phase::prefill, 4, 512, 512}, Precision{}, KernelPlan{}, shard_dims(m, 1),
                   ops);
  EXPECT_EQ(find(ops, "qkv_proj")->gemm.m, 2048);
  EXPECT_EQ(find(ops, "lm_head")->gemm.m, 4);
  EXPECT_EQ(find(ops, "lm_head")->gemm.n, 128256);  // tied: the embedding matrix
}

// Causal prefill of S tokens evaluates S(S+1)/2 query-key pairs.
TEST(StepGraph, CausalAttentionPairs) {
  AttentionShape s{1, 32, 8, 128, 512, 512, true};
  EXPECT_DOUBLE_EQ(attention_pairs(s), 512.0 * 513.0 / 2.0);
  s.causal = false;
  s.q_len = 1;
  EXPECT_DOUBLE_EQ(attention_pairs(s), 512.0);
}

TEST(StepGraph, PytorchPlanRunsMoreKernelsThanVllm) {
  ModelConfig m = load_model("llama-3.2-1b");
  KernelPlan vllm;  // defaults are the fused plan
  KernelPlan eager;
  eager.fuse_qkv = eager.fuse_gate_up = eager.fuse_add_rmsnorm = false;
  eager.fuse_silu_mul = eager.fuse_rope_kv_write = false;
  std::vector<Op> a, b;
  build_step_graph(m, {Phase::decode, 1, 1, 513}, Precision{}, vllm, shard_dims(m, 1), a);
  build_step_graph(m, {Phase::decode, 1, 1, 513}, Precision{}, eager, shard_dims(m, 1), b);
  auto kernels = [](const std::vector<Op>& ops) {
    int64_t n = 0;
    for (const auto& op : ops) n += op.count * op.kernels;
    return n;
  };
  // vLLM: 9 kernels per layer x 16 + embedding, first norm, LM head, sampling.
  EXPECT_EQ(kernels(a), 16 * 9 + 4);
  EXPECT_GT(kernels(b), kernels(a));
  EXPECT_NE(find(b, "silu"), nullptr);
  EXPECT_NE(find(b, "q_proj"), nullptr);
  EXPECT_EQ(find(b, "qkv_proj"), nullptr);
}

TEST(StepGraph, FlashAttentionOffMaterializesScores) {
  ModelConfig m = load_model("llama-3-8b");
  KernelPlan plan;
  plan.flash_attention = false;
  std::vector<Op> ops;
  build_step_graph(m, {Phase::prefill, 1, 1024, 1024}, Precision{}, plan, shard_dims(m, 1), ops);
  EXPECT_EQ(find(ops, "attention"), nullptr);
  const Op* scores = find(ops, "attn_scores");
  ASSERT_NE(scores, nullptr);
  // Written score matrix: 32 heads x 1024 x 1024 x 2 bytes, plus reads of Q and expanded K.
  EXPECT_GE(scores->activation_bytes, 32.0 * 1024 * 1024 * 2);
  EXPECT_NE(find(ops, "repeat_kv"), nullptr);  // GQA expanded in memory
}

TEST(StepGraph, TensorParallelAddsTwoAllReducesPerLayer) {
  ModelConfig m = load_model("llama-3-70b");
  std::vector<Op> ops;
  build_step_graph(m, {Phase::decode, 8, 1, 2048}, Precision{}, KernelPlan{}, shard_dims(m, 4),
                   ops);
  int per_layer_collectives = 0;
  for (const auto& op : ops) {
    if (op.kind == OpKind::all_reduce && op.scope == Scope::per_layer) {
      ++per_layer_collectives;
      EXPECT_EQ(op.count, 80);
      EXPECT_DOUBLE_EQ(op.comm_bytes, 8.0 * 8192 * 2);  // batch x hidden x bf16
      EXPECT_EQ(op.comm_devices, 4);
    }
  }
  EXPECT_EQ(per_layer_collectives, 2);
  EXPECT_EQ(find(ops, "qkv_proj")->gemm.n, (64 / 4 + 2 * 8 / 4) * 128);
}

TEST(StepGraph, TensorParallelDegreeMustDivide) {
  ModelConfig m = load_model("llama-3-8b");
  EXPECT_THROW(shard_dims(m, 3), InputError);
  EXPECT_THROW(shard_dims(m, 0), InputError);
  // 16 devices > 8 KV heads: each KV head is replicated on 2 devices.
  EXPECT_EQ(shard_dims(m, 16).kv_heads, 1);
  EXPECT_THROW(shard_dims(m, 64), InputError);  // 32 heads do not split 64 ways
}

TEST(StepGraph, MixtralExpertsTouchedByBatch) {
  EXPECT_DOUBLE_EQ(expected_active_experts(8, 2, 1), 2.0);
  EXPECT_NEAR(expected_active_experts(8, 2, 1000), 8.0, 1e-9);
  ModelConfig m = load_model("mixtral-8x7b");
  std::vector<Op> ops;
  build_step_graph(m, {Phase::decode, 1, 1, 512}, Precision{}, KernelPlan{}, shard_dims(m, 1), ops);
  const Op* up = find(ops, "experts_gate_up");
  ASSERT_NE(up, nullptr);
  // One token: two experts' gate/up weights are read.
  EXPECT_DOUBLE_EQ(up->weight_bytes, 2.0 * 2 * 14336 * 4096 * 2);
}

// ---- The step by blocks: families, and single blocks pinned by hand-worked values. ----

std::vector<std::string> names(const std::vector<Op>& ops) {
  std::vector<std::string> out;
  for (const auto& op : ops) out.emplace_back(op.name);
  return out;
}

std::vector<std::string> block_names(const ModelFamily& family) {
  std::vector<std::string> out;
  for (const auto& block : family.blocks) out.emplace_back(block.name);
  return out;
}

TEST(StepBlocks, FamiliesListTheirBlocksInOrder) {
  using V = std::vector<std::string>;
  const ModelFamily& llama = model_family(load_model("llama-3-8b"));
  EXPECT_STREQ(llama.name, "llama");
  EXPECT_EQ(llama.norm, NormKind::rms);
  EXPECT_EQ(block_names(llama), (V{"token_embedding", "rotary_attention", "gated_mlp", "head"}));
  EXPECT_STREQ(model_family(load_model("qwen2.5-7b")).name, "llama");  // QKV bias from config
  const ModelFamily& mixtral = model_family(load_model("mixtral-8x7b"));
  EXPECT_STREQ(mixtral.name, "mixtral");
  EXPECT_EQ(block_names(mixtral), (V{"token_embedding", "rotary_attention", "moe_mlp", "head"}));
  const ModelFamily& gpt = model_family(load_model("gpt3-175b"));
  EXPECT_STREQ(gpt.name, "gpt");
  EXPECT_EQ(gpt.norm, NormKind::layer);
  EXPECT_EQ(block_names(gpt),
            (V{"token_position_embedding", "learned_position_attention", "gelu_mlp", "head"}));
  EXPECT_TRUE(model_families().back().matches(ModelConfig{}));  // the last one takes any config
}

TEST(StepBlocks, FamilyFollowsTheConfig) {
  nlohmann::json dense = {{"model_type", "phi3"},     {"hidden_size", 256},
                          {"intermediate_size", 512}, {"num_hidden_layers", 2},
                          {"num_attention_heads", 4}, {"vocab_size", 1000}};
  EXPECT_STREQ(model_family(parse_model_config(dense, "t", "t")).name, "llama");
  nlohmann::json moe = dense;
  moe["num_local_experts"] = 4;
  moe["num_experts_per_tok"] = 1;
  EXPECT_STREQ(model_family(parse_model_config(moe, "t", "t")).name, "mixtral");
}

// vLLM plan: fused QKV, RoPE with the KV write, add+norm, gate/up and SiLU x up.
TEST(StepBlocks, VllmDecodeOfLlamaInOrder) {
  ModelConfig m = load_model("llama-3-8b");
  std::vector<Op> ops;
  build_step_graph(m, {Phase::decode, 1, 1, 1024}, Precision{}, KernelPlan{}, shard_dims(m, 1),
                   ops);
  EXPECT_EQ(names(ops), (std::vector<std::string>{
                            "embedding", "input_norm", "qkv_proj", "rope_kv_write", "attention",
                            "o_proj", "post_attn_add_norm", "gate_up_proj", "silu_mul", "down_proj",
                            "mlp_add_next_norm", "lm_head", "sampling"}));
  EXPECT_EQ(ops[1].scope, Scope::pre_layers);  // the first layer's norm; later ones are fused
  EXPECT_EQ(ops[10].count, 32);
}

// PyTorch eager plan with tensor parallelism: every kernel apart, collectives where they sit.
TEST(StepBlocks, EagerTensorParallelLlamaInOrder) {
  ModelConfig m = load_model("llama-3-8b");
  KernelPlan eager;
  eager.fuse_qkv = eager.fuse_gate_up = eager.fuse_add_rmsnorm = false;
  eager.fuse_silu_mul = eager.fuse_rope_kv_write = false;
  eager.rope_table_gathers = 2;
  std::vector<Op> ops;
  build_step_graph(m, {Phase::prefill, 1, 16, 16}, Precision{}, eager, shard_dims(m, 2), ops);
  EXPECT_EQ(names(ops), (std::vector<std::string>{"embedding",
                                                  "rope_table_gather",
                                                  "embedding_all_reduce",
                                                  "input_norm",
                                                  "q_proj",
                                                  "k_proj",
                                                  "v_proj",
                                                  "rope",
                                                  "kv_write",
                                                  "attention",
                                                  "o_proj",
                                                  "attn_all_reduce",
                                                  "attn_residual_add",
                                                  "post_attn_norm",
                                                  "gate_proj",
                                                  "up_proj",
                                                  "silu",
                                                  "mul",
                                                  "down_proj",
                                                  "mlp_all_reduce",
                                                  "mlp_residual_add",
                                                  "final_norm",
                                                  "lm_head",
                                                  "logits_all_gather",
                                                  "sampling"}));
  EXPECT_EQ(ops[2].scope, Scope::pre_layers);
  EXPECT_EQ(ops[2].count, 1);
  EXPECT_EQ(ops[21].scope, Scope::post_layers);
}

}  // namespace
}  // namespace inferlab
