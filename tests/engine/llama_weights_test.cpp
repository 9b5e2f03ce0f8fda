#include "engine/llama_weights.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "engine/init_weights.hpp"
#include "engine/safetensors_writer.hpp"
#include "engine_test_support.hpp"

namespace inferlab::engine {
namespace {

using testing::expect_input_error;
using testing::ScratchDir;

LlamaConfig tiny_llama() {
  return parse_llama_config(testing::tiny_llama_config_json(), "tiny", "tiny config");
}
LlamaConfig tiny_qwen() {
  return parse_llama_config(testing::tiny_qwen_config_json(), "tiny-qwen", "tiny config");
}

// Zero-filled BF16 tensors for every spec, with `edit` applied to the list first.
void write_checkpoint(const std::filesystem::path& folder, const LlamaConfig& config,
                      const std::function<void(std::vector<TensorData>&)>& edit) {
  std::vector<TensorData> tensors;
  for (const auto& spec : llama_weight_specs(config)) {
    TensorSpec tensor{spec.name, TensorDType::bf16, spec.shape};
    tensors.push_back({tensor, std::vector<uint8_t>(tensor.byte_size(), 0)});
  }
  edit(tensors);
  for (auto& tensor : tensors) tensor.bytes.resize(tensor.spec.byte_size());
  write_safetensors(folder / "model.safetensors", tensors);
}

TEST(LlamaConfig, ParsesWhatTheEngineNeeds) {
  auto config = tiny_llama();
  EXPECT_DOUBLE_EQ(config.rms_norm_eps, 1e-5);
  EXPECT_EQ(config.rope.kind, RopeParams::Kind::llama3);
  EXPECT_DOUBLE_EQ(config.rope.theta, 500000.0);
  EXPECT_DOUBLE_EQ(config.rope.factor, 32.0);
  EXPECT_DOUBLE_EQ(config.rope.high_freq_factor, 4.0);
  EXPECT_DOUBLE_EQ(config.rope.original_max_position_embeddings, 64);
  EXPECT_EQ(config.bos_token_id, 1);
  EXPECT_EQ(config.eos_token_ids, (std::vector<int64_t>{2}));
  EXPECT_EQ(config.sliding_window, 0);
  auto qwen = tiny_qwen();
  EXPECT_TRUE(qwen.model.qkv_bias);
  EXPECT_EQ(qwen.rope.kind, RopeParams::Kind::plain);

  auto json = testing::tiny_llama_config_json();
  json["rope_scaling"].erase("low_freq_factor");
  expect_input_error([&] { parse_llama_config(json, "x", "cfg"); }, {"low_freq_factor"});
  json = testing::tiny_llama_config_json();
  json["rope_scaling"]["rope_type"] = "yarn";
  expect_input_error([&] { parse_llama_config(json, "x", "cfg"); }, {"'yarn' is not supported"});
  json = testing::tiny_llama_config_json();
  json["hidden_act"] = "gelu";
  expect_input_error([&] { parse_llama_config(json, "x", "cfg"); }, {"hidden_act"});
  json = testing::tiny_llama_config_json();
  json["model_type"] = "mistral";
  json["sliding_window"] = 4096;
  EXPECT_EQ(parse_llama_config(json, "x", "cfg").sliding_window, 4096);
}

TEST(LlamaConfig, TransformersFiveRopeParameters) {
  // transformers 5 writes rope_theta and the scaling into one rope_parameters object.
  auto json = testing::tiny_llama_config_json();
  json.erase("rope_theta");
  json.erase("rope_scaling");
  json["rope_parameters"] = {{"rope_type", "llama3"},   {"rope_theta", 250000.0},
                             {"factor", 8.0},           {"low_freq_factor", 1.0},
                             {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  auto config = parse_llama_config(json, "x", "cfg");
  EXPECT_EQ(config.rope.kind, RopeParams::Kind::llama3);
  EXPECT_DOUBLE_EQ(config.rope.theta, 250000.0);
  EXPECT_DOUBLE_EQ(config.rope.factor, 8.0);
  EXPECT_DOUBLE_EQ(config.rope.original_max_position_embeddings, 8192);
  json["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e6}};
  config = parse_llama_config(json, "x", "cfg");
  EXPECT_EQ(config.rope.kind, RopeParams::Kind::plain);
  EXPECT_DOUBLE_EQ(config.rope.theta, 1e6);
}

TEST(LlamaConfig, ShippedModels) {
  auto config = load_llama_config("llama-3.2-1b");
  EXPECT_EQ(config.rope.kind, RopeParams::Kind::llama3);
  EXPECT_DOUBLE_EQ(config.rope.original_max_position_embeddings, 8192);
  EXPECT_TRUE(config.model.tie_word_embeddings);
  auto specs = llama_weight_specs(config);
  EXPECT_EQ(specs.size(), 1u + 16 * 9 + 1);  // tied: no lm_head
  int64_t params = 0;
  for (const auto& spec : specs) params += spec.elements();
  EXPECT_EQ(params, config.model.total_params());
  auto qwen = load_llama_config("qwen2.5-7b");
  EXPECT_TRUE(qwen.model.qkv_bias);
  int64_t qwen_params = 0;
  for (const auto& spec : llama_weight_specs(qwen)) qwen_params += spec.elements();
  EXPECT_EQ(qwen_params, qwen.model.total_params());
  // Mixtral 8x7B: a mixture of experts (the CPU reference runs it; moe_config_test.cpp).
  auto mixtral = load_llama_config("mixtral-8x7b");
  int64_t mixtral_params = 0;
  for (const auto& spec : llama_weight_specs(mixtral)) mixtral_params += spec.elements();
  EXPECT_EQ(mixtral_params, mixtral.model.total_params());
}

TEST(LlamaWeights, SpecNamesAndShapes) {
  auto specs = llama_weight_specs(tiny_qwen());
  ASSERT_EQ(specs.size(), 1u + 2 * 12 + 2);
  EXPECT_EQ(specs[0].name, "model.embed_tokens.weight");
  EXPECT_EQ(specs[0].shape, (std::vector<int64_t>{256, 64}));
  EXPECT_EQ(specs[2].name, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(specs[2].shape, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(specs[3].name, "model.layers.0.self_attn.k_proj.weight");
  EXPECT_EQ(specs[3].shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(specs[6].name, "model.layers.0.self_attn.k_proj.bias");
  EXPECT_EQ(specs[6].shape, (std::vector<int64_t>{32}));
  EXPECT_EQ(specs[12].name, "model.layers.0.mlp.down_proj.weight");
  EXPECT_EQ(specs[12].shape, (std::vector<int64_t>{64, 128}));
  EXPECT_EQ(specs.back().name, "lm_head.weight");
}

TEST(LlamaWeights, MissingTensor) {
  ScratchDir dir("weights");
  auto config = tiny_llama();
  write_checkpoint(dir.path(), config, [](auto& tensors) {
    std::erase_if(tensors, [](const TensorData& t) {
      return t.spec.name == "model.layers.1.mlp.up_proj.weight";
    });
  });
  auto checkpoint = Checkpoint::open(dir.path());
  expect_input_error([&] { load_llama_weights(checkpoint, config); },
                     {"missing tensors (1)", "model.layers.1.mlp.up_proj.weight"});
}

TEST(LlamaWeights, WrongShape) {
  ScratchDir dir("weights");
  auto config = tiny_llama();
  write_checkpoint(dir.path(), config, [](auto& tensors) {
    for (auto& t : tensors) {
      if (t.spec.name == "model.layers.0.self_attn.k_proj.weight") t.spec.shape = {64, 64};
    }
  });
  auto checkpoint = Checkpoint::open(dir.path());
  expect_input_error([&] { load_llama_weights(checkpoint, config); },
                     {"model.layers.0.self_attn.k_proj.weight is [64, 64], expected [32, 64]"});
}

TEST(LlamaWeights, WrongDtypeAndExtraTensors) {
  ScratchDir dir("weights");
  auto config = tiny_llama();
  write_checkpoint(dir.path(), config, [](auto& tensors) {
    for (auto& t : tensors) {
      if (t.spec.name == "model.norm.weight") t.spec.dtype = TensorDType::i32;
    }
    tensors.push_back({{"model.layers.0.extra.weight", TensorDType::f32, {2}}, {}});
    tensors.push_back(
        {{"model.layers.0.self_attn.rotary_emb.inv_freq", TensorDType::f32, {8}}, {}});
    tensors.push_back({{"lm_head.weight", TensorDType::bf16, {256, 64}}, {}});  // tied: ignored
  });
  auto checkpoint = Checkpoint::open(dir.path());
  try {
    load_llama_weights(checkpoint, config);
    FAIL() << "no error";
  } catch (const InputError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("model.norm.weight is I32"), std::string::npos) << message;
    EXPECT_NE(message.find("unexpected tensors (1): model.layers.0.extra.weight"),
              std::string::npos)
        << message;
  }
}

TEST(InitWeights, WritesLoadableCheckpoint) {
  ScratchDir dir("init");
  std::ofstream(dir / "tok.json") << "{\"model\": {}}";
  auto config = tiny_qwen();
  InitWeightsOptions options;
  options.out_dir = dir / "ckpt";
  options.seed = 7;
  options.tokenizer_json = dir / "tok.json";
  auto result = init_weights(config, options);
  EXPECT_EQ(result.parameters, config.model.total_params());
  EXPECT_EQ(result.weight_bytes, 2 * static_cast<uint64_t>(config.model.total_params()));
  for (const char* name :
       {"config.json", "model.safetensors", "generation_config.json", "tokenizer.json"}) {
    EXPECT_TRUE(std::filesystem::exists(options.out_dir / name)) << name;
  }
  EXPECT_FALSE(std::filesystem::exists(options.out_dir / "tokenizer_config.json"));
  auto model = load_llama_model(options.out_dir);
  EXPECT_EQ(model.config.hf_config, config.hf_config);
  SafetensorsFile file(options.out_dir / "model.safetensors");
  EXPECT_EQ(file.metadata().at("format"), "pt");
  EXPECT_EQ(file.find("lm_head.weight")->dtype, TensorDType::bf16);

  // The values: what random_llama_weights makes in memory, with the documented statistics.
  auto memory = random_llama_weights(config, 7);
  EXPECT_EQ(model.weights.embed_tokens, memory.embed_tokens);
  EXPECT_EQ(model.weights.layers[1].down_proj, memory.layers[1].down_proj);
  EXPECT_EQ(model.weights.layers[1].v_bias, memory.layers[1].v_bias);
  const auto& q = model.weights.layers[0].q_proj;
  double sum = 0, squares = 0;
  for (float value : q) {
    sum += value;
    squares += double{value} * value;
  }
  const double n = static_cast<double>(q.size());
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(std::sqrt(squares / n), 1 / 8.0, 0.01);  // 1/sqrt(fan_in 64)
  double norm_mean = 0;
  for (float value : model.weights.final_norm) norm_mean += value / 64.0;
  EXPECT_NEAR(norm_mean, 1.0, 0.05);
  EXPECT_NE(random_llama_weights(config, 8).embed_tokens, memory.embed_tokens);

  expect_input_error(
      [&] {
        options.tokenizer_json = dir / "missing.json";
        init_weights(config, options);
      },
      {"missing.json"});
}

TEST(InitWeights, ShardsWithIndex) {
  ScratchDir dir("init");
  auto config = tiny_llama();
  InitWeightsOptions options;
  options.out_dir = dir / "single";
  options.seed = 3;
  init_weights(config, options);
  options.out_dir = dir / "sharded";
  // Embedding 32 KiB, a layer 72 KiB (gate, up, down 16 KiB each): six shards of <= 40 kB.
  options.max_shard_bytes = 40'000;
  auto result = init_weights(config, options);
  EXPECT_TRUE(std::filesystem::exists(options.out_dir / "model.safetensors.index.json"));
  EXPECT_TRUE(std::filesystem::exists(options.out_dir / "model-00001-of-00006.safetensors"));
  EXPECT_TRUE(std::filesystem::exists(options.out_dir / "model-00006-of-00006.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(options.out_dir / "model.safetensors"));
  for (const auto& file : result.files) {
    if (file.extension() == ".safetensors") {
      EXPECT_LE(std::filesystem::file_size(file), 40'000u + 4096);
    }
  }
  auto checkpoint = Checkpoint::open(options.out_dir);
  EXPECT_EQ(checkpoint.shard_count(), 6u);
  auto sharded = load_llama_model(options.out_dir);
  auto single = load_llama_model(dir / "single");
  EXPECT_EQ(sharded.weights.embed_tokens, single.weights.embed_tokens);
  EXPECT_EQ(sharded.weights.layers[1].gate_proj, single.weights.layers[1].gate_proj);
  EXPECT_EQ(sharded.weights.final_norm, single.weights.final_norm);

  // Writing a single file over the sharded folder removes the stale shards.
  options.max_shard_bytes = 5'000'000'000;
  init_weights(config, options);
  EXPECT_FALSE(std::filesystem::exists(options.out_dir / "model.safetensors.index.json"));
  EXPECT_FALSE(std::filesystem::exists(options.out_dir / "model-00001-of-00006.safetensors"));
  EXPECT_EQ(Checkpoint::open(options.out_dir).shard_count(), 1u);
}

}  // namespace
}  // namespace inferlab::engine
