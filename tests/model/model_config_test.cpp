#include "model/model_config.hpp"

#include <gtest/gtest.h>

#include "model/footprint.hpp"
#include "util/error.hpp"

namespace inferlab {
namespace {

TEST(ModelConfig, Llama3_8BShapesFromConfigJson) {
  ModelConfig m = load_model("llama-3-8b");
  EXPECT_EQ(m.hidden_size, 4096);
  EXPECT_EQ(m.num_layers, 32);
  EXPECT_EQ(m.num_heads, 32);
  EXPECT_EQ(m.num_kv_heads, 8);
  EXPECT_EQ(m.head_dim, 128);  // hidden / heads, no head_dim field
  EXPECT_FALSE(m.tie_word_embeddings);
  EXPECT_FALSE(m.is_moe());
}

// Hand count: embedding 128256*4096 = 525,336,576 (and the same again for the untied LM head);
// per layer q 4096^2 + k,v 4096*1024 each + o 4096^2 + MLP 3*4096*14336 + 2 norms of 4096
// = 218,112,000; 32 layers = 6,979,584,000; final norm 4096. Total 8,030,261,248.
TEST(ModelConfig, Llama3_8BParameterCount) {
  EXPECT_EQ(load_model("llama-3-8b").total_params(), 8'030'261'248);
}

// Tied embeddings: Llama 3.2 1B is 1,235,814,400 parameters (embedding counted once), the
// figure Hugging Face reports as 1.24B. head_dim 64 comes from the config.
TEST(ModelConfig, Llama32_1BTiedEmbeddingsAndHeadDim) {
  ModelConfig m = load_model("llama-3.2-1b");
  EXPECT_TRUE(m.tie_word_embeddings);
  EXPECT_EQ(m.head_dim, 64);
  EXPECT_EQ(m.lm_head_params(), 0);
  EXPECT_EQ(m.total_params(), 1'235'814'400);
}

// Mixtral 8x7B per layer: attention 41,943,040 + 8 experts x 176,160,768 + router 32,768 +
// norms 8,192 = 1,451,270,144; x 32 = 46,440,644,608; + untied 32000x4096 embedding and head
// 262,144,000 + final norm 4,096 = 46,702,792,704 (the published 46.7B).
TEST(ModelConfig, MixtralExperts) {
  ModelConfig m = load_model("mixtral-8x7b");
  EXPECT_EQ(m.num_experts, 8);
  EXPECT_EQ(m.experts_per_token, 2);
  EXPECT_EQ(m.total_params(), 46'702'792'704);
}

// Qwen2.5 7B: QKV bias (3584 + 2*512 per layer) and untied 152064-row embeddings:
// 7,615,616,512 parameters, the published 7.61B.
TEST(ModelConfig, Qwen2BiasAndCount) {
  ModelConfig m = load_model("qwen2.5-7b");
  EXPECT_TRUE(m.qkv_bias);
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_EQ(m.total_params(), 7'615'616'512);
}

TEST(ModelConfig, RopeScalingParsed) {
  ModelConfig m = load_model("llama-3.1-405b");
  ASSERT_TRUE(m.rope_scaling.has_value());
  EXPECT_EQ(m.rope_scaling->type, "llama3");
  EXPECT_DOUBLE_EQ(m.rope_scaling->factor, 8.0);
  EXPECT_FALSE(load_model("llama-3-8b").rope_scaling.has_value());
  // Llama 3.1 8B: Llama 3 8B's shapes with a 128k context and llama3 rope scaling.
  const ModelConfig l31 = load_model("llama-3.1-8b");
  EXPECT_EQ(l31.max_position_embeddings, 131072);
  EXPECT_EQ(l31.total_params(), load_model("llama-3-8b").total_params());
  ASSERT_TRUE(l31.rope_scaling.has_value());
  EXPECT_EQ(l31.rope_scaling->type, "llama3");
  EXPECT_DOUBLE_EQ(l31.rope_scaling->factor, 8.0);
}

TEST(ModelConfig, AllShippedModelsLoad) {
  auto names = known_models();
  // 13 engine families' models (Llama, Qwen2.5, Qwen3, Qwen3-MoE, Mistral, Mixtral, Phi-3) and
  // gpt3-175b
  EXPECT_EQ(names.size(), 14u);
  for (const auto& name : names) EXPECT_NO_THROW(load_model(name)) << name;
}

TEST(ModelConfig, RejectsBadConfigs) {
  nlohmann::json good = {{"hidden_size", 64},        {"intermediate_size", 128},
                         {"num_hidden_layers", 2},   {"num_attention_heads", 4},
                         {"num_key_value_heads", 2}, {"vocab_size", 100}};
  EXPECT_NO_THROW(parse_model_config(good, "t", "t"));
  auto bad = good;
  bad.erase("hidden_size");
  EXPECT_THROW(parse_model_config(bad, "t", "t"), InputError);
  bad = good;
  bad["hidden_size"] = -64;
  EXPECT_THROW(parse_model_config(bad, "t", "t"), InputError);
  bad = good;
  bad["hidden_size"] = "64";
  EXPECT_THROW(parse_model_config(bad, "t", "t"), InputError);
  bad = good;
  bad["num_key_value_heads"] = 3;  // 4 heads are not a multiple of 3 KV heads
  EXPECT_THROW(parse_model_config(bad, "t", "t"), InputError);
  bad = good;
  bad["hidden_size"] = 99999999999999;  // absurd width
  EXPECT_THROW(parse_model_config(bad, "t", "t"), InputError);
}

TEST(ModelConfig, UnknownNameListsKnownOnes) {
  try {
    load_model("llama-9");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("llama-3-8b"), std::string::npos);
  }
}

}  // namespace
}  // namespace inferlab
