// Mixture of experts on the engine's CPU reference, the parts before the forward pass: one
// token's routing worked by hand, the configs (Mixtral, Qwen2-MoE) and their tensors, and the
// refusals (bad expert counts, a missing expert tensor, shared experts, the CUDA backend, tensor
// parallelism, quantization).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "engine/cpu/cpu_backend.hpp"
#include "engine/cpu/moe.hpp"
#include "engine/cpu/ops.hpp"
#include "engine/engine_open.hpp"
#include "engine/init_weights.hpp"
#include "engine/llama_weights.hpp"
#include "engine/safetensors_writer.hpp"
#include "engine/tp/shard.hpp"
#include "engine_test_support.hpp"
#include "moe_test_support.hpp"

namespace inferlab::engine {
namespace {

using testing::expect_input_error;
using testing::ScratchDir;

LlamaConfig tiny_mixtral() {
  return parse_llama_config(testing::tiny_mixtral_config_json(), "tiny-mixtral", "tiny config");
}

// Hidden 2, x = [1, 2]; router rows [0.5, 0], [1, 1], [0, 1], [-1, 0.5] give logits
// [0.5, 3, 2, 0]: experts 1 and 2 are the top 2.
// Mixtral (softmax of the two logits): e^3 / (e^3 + e^2) = 1 / (1 + e^-1) = 0.7310586 and
// 0.2689414. Softmax over all four, not renormalised: e^3 / (e^0.5 + e^3 + e^2 + e^0) =
// 20.085537 / 30.123314 = 0.6667776 and 7.389056 / 30.123314 = 0.2452934.
TEST(MoeRouting, FourExpertsTopTwoByHand) {
  const float x[2] = {1.0f, 2.0f};
  const float router[8] = {0.5f, 0.0f, 1.0f, 1.0f, 0.0f, 1.0f, -1.0f, 0.5f};
  float logits[4];
  cpu::linear(x, 1, router, nullptr, 2, 4, logits);
  ASSERT_FLOAT_EQ(logits[0], 0.5f);
  ASSERT_FLOAT_EQ(logits[1], 3.0f);
  ASSERT_FLOAT_EQ(logits[2], 2.0f);
  ASSERT_FLOAT_EQ(logits[3], 0.0f);

  const cpu::ExpertChoice mixtral = cpu::route_token(logits, 4, 2, true);
  EXPECT_EQ(mixtral.experts, (std::vector<int64_t>{1, 2}));
  EXPECT_NEAR(mixtral.weights.at(0), 0.7310586, 1e-6);
  EXPECT_NEAR(mixtral.weights.at(1), 0.2689414, 1e-6);

  const cpu::ExpertChoice qwen = cpu::route_token(logits, 4, 2, false);
  EXPECT_EQ(qwen.experts, (std::vector<int64_t>{1, 2}));
  EXPECT_NEAR(qwen.weights.at(0), 0.6667776, 1e-6);
  EXPECT_NEAR(qwen.weights.at(1), 0.2452934, 1e-6);
}

TEST(MoeRouting, TiesGoToTheLowerExpert) {
  const float logits[5] = {1.0f, 4.0f, 2.0f, 4.0f, 2.0f};
  EXPECT_EQ(cpu::route_token(logits, 5, 1, true).experts, (std::vector<int64_t>{1}));
  EXPECT_EQ(cpu::route_token(logits, 5, 3, true).experts, (std::vector<int64_t>{1, 3, 2}));
  const cpu::ExpertChoice one = cpu::route_token(logits, 5, 1, true);
  EXPECT_FLOAT_EQ(one.weights.at(0), 1.0f);  // top-1 renormalised: all of the token
}

TEST(MoeConfig, MixtralAndQwenMoeConfigs) {
  const LlamaConfig mixtral = tiny_mixtral();
  EXPECT_TRUE(mixtral.model.is_moe());
  EXPECT_EQ(mixtral.model.num_experts, 4);
  EXPECT_EQ(mixtral.model.experts_per_token, 2);
  EXPECT_STREQ(family_spec(mixtral.model).name, "mixtral");
  EXPECT_TRUE(mixtral.moe.renormalize_top_k);
  for (bool norm : {false, true}) {
    const LlamaConfig qwen =
        parse_llama_config(testing::tiny_qwen_moe_config_json(norm), "tiny-qwen-moe", "test");
    EXPECT_EQ(qwen.model.num_experts, 4);
    EXPECT_EQ(qwen.model.intermediate_size, 48);  // moe_intermediate_size
    EXPECT_TRUE(qwen.model.qkv_bias);
    EXPECT_STREQ(family_spec(qwen.model).name, "qwen2_moe");
    EXPECT_EQ(qwen.moe.renormalize_top_k, norm);
  }
  // The shipped Mixtral 8x7B loads, and its memory counts all eight experts.
  const LlamaConfig big = load_llama_config("mixtral-8x7b");
  EXPECT_EQ(big.model.num_experts, 8);
  EXPECT_NEAR(static_cast<double>(big.model.total_params()), 46.7e9, 0.1e9);
  EXPECT_GT(cpu_backend_bytes(big, 16), 4 * big.model.total_params());
}

TEST(MoeConfig, TensorNamesAndShapes) {
  const LlamaConfig config = tiny_mixtral();
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const WeightSpec& spec : llama_weight_specs(config)) shapes[spec.name] = spec.shape;
  EXPECT_EQ(shapes.at("model.layers.1.block_sparse_moe.gate.weight"),
            (std::vector<int64_t>{4, 32}));
  EXPECT_EQ(shapes.at("model.layers.0.block_sparse_moe.experts.3.w1.weight"),
            (std::vector<int64_t>{48, 32}));
  EXPECT_EQ(shapes.at("model.layers.0.block_sparse_moe.experts.3.w3.weight"),
            (std::vector<int64_t>{48, 32}));
  EXPECT_EQ(shapes.at("model.layers.1.block_sparse_moe.experts.0.w2.weight"),
            (std::vector<int64_t>{32, 48}));
  EXPECT_FALSE(shapes.contains("model.layers.0.mlp.gate_proj.weight"));
  // Embedding, lm_head, final norm; per layer 2 norms, q/k/v/o, router, 4 experts x 3.
  EXPECT_EQ(shapes.size(), 3u + 2 * (2 + 4 + 1 + 12));
  int64_t elements = 0;
  for (const WeightSpec& spec : llama_weight_specs(config)) elements += spec.elements();
  EXPECT_EQ(elements, config.model.total_params());

  const LlamaConfig qwen =
      parse_llama_config(testing::tiny_qwen_moe_config_json(true), "tiny-qwen-moe", "test");
  std::map<std::string, std::vector<int64_t>> qwen_shapes;
  for (const WeightSpec& spec : llama_weight_specs(qwen)) qwen_shapes[spec.name] = spec.shape;
  EXPECT_EQ(qwen_shapes.at("model.layers.0.mlp.gate.weight"), (std::vector<int64_t>{4, 32}));
  EXPECT_EQ(qwen_shapes.at("model.layers.0.mlp.experts.2.down_proj.weight"),
            (std::vector<int64_t>{32, 48}));
}

TEST(MoeConfig, InitWeightsWritesALoadableCheckpoint) {
  ScratchDir dir("moe_init");
  const LlamaConfig config = tiny_mixtral();
  InitWeightsOptions options;
  options.out_dir = dir.path();
  options.seed = 5;
  init_weights(config, options);
  const LlamaModel loaded = load_llama_model(dir.path());
  const LlamaWeights drawn = random_llama_weights(config, 5);
  ASSERT_EQ(loaded.weights.layers.at(1).experts.size(), 4u);
  EXPECT_EQ(loaded.weights.layers.at(1).router, drawn.layers.at(1).router);
  EXPECT_EQ(loaded.weights.layers.at(1).experts.at(3).down_proj,
            drawn.layers.at(1).experts.at(3).down_proj);
  EXPECT_EQ(loaded.weights.layers.at(0).experts.at(2).gate_proj.size(), 48u * 32);
  EXPECT_TRUE(loaded.weights.layers.at(0).gate_proj.empty());

  // Qwen-MoE's names, written and read back.
  ScratchDir qwen_dir("moe_init_qwen");
  const LlamaConfig qwen =
      parse_llama_config(testing::tiny_qwen_moe_config_json(false), "tiny-qwen-moe", "test");
  options.out_dir = qwen_dir.path();
  init_weights(qwen, options);
  const LlamaModel qwen_loaded = load_llama_model(qwen_dir.path());
  EXPECT_FALSE(qwen_loaded.config.moe.renormalize_top_k);
  EXPECT_EQ(qwen_loaded.weights.layers.at(1).experts.at(2).up_proj,
            random_llama_weights(qwen, 5).layers.at(1).experts.at(2).up_proj);
  EXPECT_EQ(qwen_loaded.weights.layers.at(0).q_bias.size(), 32u);
}

TEST(MoeConfig, BadExpertCountsAreRefused) {
  auto config = testing::tiny_mixtral_config_json();
  config["num_experts_per_tok"] = 5;
  expect_input_error([&] { parse_llama_config(config, "bad", "bad config"); },
                     {"bad config", "num_experts_per_tok (5)", "4 experts (num_local_experts)"});
  config["num_experts_per_tok"] = 0;
  expect_input_error([&] { parse_llama_config(config, "bad", "bad config"); },
                     {"bad config", "num_experts_per_tok"});
  config.erase("num_experts_per_tok");
  expect_input_error([&] { parse_llama_config(config, "bad", "bad config"); },
                     {"num_experts_per_tok"});
  auto qwen = testing::tiny_qwen_moe_config_json(true);
  qwen["num_experts_per_tok"] = 7;
  expect_input_error([&] { parse_llama_config(qwen, "bad", "bad config"); },
                     {"num_experts_per_tok (7)", "4 experts (num_experts)"});
}

// transformers 5 writes Qwen3-MoE's expert count as num_local_experts (its attribute map): the
// expert width and the routing rule still come from moe_intermediate_size and norm_topk_prob.
TEST(MoeConfig, Qwen3MoeAsTransformersFiveWritesIt) {
  for (bool norm : {false, true}) {
    nlohmann::json json = testing::tiny_qwen_moe_config_json(norm);
    json["architectures"] = {"Qwen3MoeForCausalLM"};
    json["model_type"] = "qwen3_moe";
    json["num_local_experts"] = json["num_experts"];
    json.erase("num_experts");
    const LlamaConfig config = parse_llama_config(json, "q3", "test");
    EXPECT_EQ(config.model.num_experts, 4);
    EXPECT_EQ(config.model.intermediate_size, 48);  // moe_intermediate_size, not 128
    EXPECT_EQ(config.moe.renormalize_top_k, norm);
    EXPECT_STREQ(family_spec(config.model).name, "qwen3_moe");
  }
}

TEST(MoeConfig, UnsupportedFeaturesAreRefused) {
  auto shared = testing::tiny_qwen_moe_config_json(true);
  shared["shared_expert_intermediate_size"] = 64;
  expect_input_error([&] { parse_llama_config(shared, "q", "qwen config"); },
                     {"qwen config", "shared expert", "not supported"});
  auto sparse_step = testing::tiny_qwen_moe_config_json(true);
  sparse_step["decoder_sparse_step"] = 2;
  expect_input_error([&] { parse_llama_config(sparse_step, "q", "qwen config"); },
                     {"decoder_sparse_step", "not supported"});
  auto dense_layers = testing::tiny_qwen_moe_config_json(true);
  dense_layers["mlp_only_layers"] = {0};
  expect_input_error([&] { parse_llama_config(dense_layers, "q", "qwen config"); },
                     {"mlp_only_layers"});
}

TEST(MoeConfig, MissingExpertTensorIsNamed) {
  ScratchDir dir("moe_missing");
  const LlamaConfig config = tiny_mixtral();
  std::vector<TensorData> tensors;
  for (const auto& spec : llama_weight_specs(config)) {
    if (spec.name == "model.layers.1.block_sparse_moe.experts.2.w3.weight") continue;
    TensorSpec tensor{spec.name, TensorDType::bf16, spec.shape};
    tensors.push_back({tensor, std::vector<uint8_t>(tensor.byte_size(), 0)});
  }
  write_safetensors(dir / "model.safetensors", tensors);
  const auto checkpoint = Checkpoint::open(dir.path());
  expect_input_error(
      [&] { load_llama_weights(checkpoint, config); },
      {"missing tensors (1)", "model.layers.1.block_sparse_moe.experts.2.w3.weight"});
}

// Tensor parallelism, quantized weights and, on the CUDA backend, routings past its kernels
// refuse a mixture of experts before a GPU is looked for or a weight is read (so on any machine).
TEST(MoeConfig, CudaLimitsAndQuantizationAreRefused) {
  ScratchDir dir("moe_refuse");
  nlohmann::json wide = testing::tiny_mixtral_config_json();
  wide["num_local_experts"] = 300;
  { std::ofstream(dir / "config.json") << wide.dump(); }
  EngineOptions options;
  options.device = "cuda";
  options.kv_tokens = 16;
  expect_input_error([&] { open_backend((dir / "config.json").string(), options); },
                     {"300 experts", "at most 256 experts", "--device cpu"});
  // 40 channels an expert: whole, a multiple of 8; split over 2 GPUs, 20 a rank are not.
  nlohmann::json narrow = testing::tiny_mixtral_config_json();
  narrow["intermediate_size"] = 40;
  { std::ofstream(dir / "config.json") << narrow.dump(); }
  options.tp = 2;
  expect_input_error([&] { open_backend((dir / "config.json").string(), options); },
                     {"split over 2 GPUs", "multiples of 8", "--device cpu"});
  options.tp = 1;
  { std::ofstream(dir / "config.json") << testing::tiny_mixtral_config_json().dump(); }
  const std::string model = (dir / "config.json").string();
  options.weights_from_checkpoint = false;
  options.quant.weights = DType::fp8;
  expect_input_error([&] { open_backend(model, options); }, {"quantized weights", "bf16"});
  options.quant.weights = DType::bf16;
  options.weights_from_checkpoint = true;
  options.device = "cpu";
  options.tp = 3;  // 48 channels an expert split 3 ways, but 4 heads do not
  expect_input_error([&] { open_backend(model, options); }, {"--tp 3", "attention heads"});
  options.tp = 1;
  options.weights_from_checkpoint = false;
  options.quant.weights = DType::int8;
  expect_input_error([&] { open_backend(model, options); }, {"quantized weights", "bf16"});
  const LlamaConfig config = tiny_mixtral();
  EXPECT_NO_THROW(check_tensor_parallel(config.model, 2));
  LlamaConfig odd = config;
  odd.model.num_kv_heads = 4;
  odd.model.intermediate_size = 50;  // 25 channels an expert a rank: fine; 4 ranks: not
  expect_input_error([&] { check_tensor_parallel(odd.model, 4); },
                     {"--tp 4", "intermediate channels an expert"});
  QuantConfig fp8;
  fp8.weights = DType::fp8;
  expect_input_error(
      [&] {
        make_cpu_backend({config, random_llama_weights(config, 1)}, 16, 16, fp8);
      },
      {"mixture-of-experts"});
  // A quantized KV cache is fine: it is the attention's.
  QuantConfig kv;
  kv.kv = DType::int8;
  EXPECT_NO_THROW(make_cpu_backend({config, random_llama_weights(config, 1)}, 16, 16, kv));
}

}  // namespace
}  // namespace inferlab::engine
