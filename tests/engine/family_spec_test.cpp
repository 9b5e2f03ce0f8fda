// Model families as data (model/family_spec.hpp): which family a config gets, that the spec's
// tensors count what the predictor counts; Phi-3, the family added by its spec alone (a
// checkpoint that stores q/k/v as one qkv_proj and gate/up as one gate_up_proj loads as the
// Llama whose tensors it stacks, gives that Llama's logits and shards the same way); and Qwen3,
// added by its spec plus one op in each forward pass (per-head q/k norms).
#include "model/family_spec.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bf16_tensor_data.hpp"
#include "cpu_prefill_pieces.hpp"
#include "double_forward.hpp"
#include "engine/bf16.hpp"
#include "engine/checkpoint.hpp"
#include "engine/checkpoint_files.hpp"
#include "engine/cpu/cpu_backend.hpp"
#include "engine/init_weights.hpp"
#include "engine/llama_config.hpp"
#include "engine/llama_weights.hpp"
#include "engine/safetensors.hpp"
#include "engine/safetensors_writer.hpp"
#include "engine/tensor_source.hpp"
#include "engine/tp/shard.hpp"
#include "engine_test_support.hpp"
#include "moe_test_support.hpp"

namespace inferlab::engine {
namespace {

using testing::bf16_tensor;
using testing::ScratchDir;

// The tiny Llama untied, as Phi-3 would write it (no QKV bias, SiLU, plain RoPE).
nlohmann::json tiny_untied_llama_json() {
  nlohmann::json config = testing::tiny_llama_config_json();
  config.erase("rope_scaling");
  config["rope_theta"] = 10000.0;
  config["tie_word_embeddings"] = false;
  return config;
}

nlohmann::json as_phi3(nlohmann::json config) {
  config["architectures"] = {"Phi3ForCausalLM"};
  config["model_type"] = "phi3";
  return config;
}

// A Phi-3 checkpoint folder holding `weights` (the Llama's), q/k/v and gate/up stacked by rows
// under Phi-3's names, written here by hand (not by init-weights).
void write_phi3_checkpoint(const std::filesystem::path& folder, const LlamaConfig& config,
                           const LlamaWeights& weights) {
  const ModelConfig& m = config.model;
  const int64_t hidden = m.hidden_size, inter = m.intermediate_size;
  std::vector<TensorData> tensors;
  tensors.push_back(
      bf16_tensor("model.embed_tokens.weight", {m.vocab_size, hidden}, {&weights.embed_tokens}));
  for (int64_t l = 0; l < m.num_layers; ++l) {
    const LayerWeights& w = weights.layers[static_cast<size_t>(l)];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    tensors.push_back(bf16_tensor(p + "input_layernorm.weight", {hidden}, {&w.input_layernorm}));
    tensors.push_back(bf16_tensor(p + "self_attn.qkv_proj.weight",
                                  {m.q_dim() + 2 * m.kv_dim(), hidden},
                                  {&w.q_proj, &w.k_proj, &w.v_proj}));
    tensors.push_back(bf16_tensor(p + "self_attn.o_proj.weight", {hidden, m.q_dim()}, {&w.o_proj}));
    tensors.push_back(bf16_tensor(p + "post_attention_layernorm.weight", {hidden},
                                  {&w.post_attention_layernorm}));
    tensors.push_back(bf16_tensor(p + "mlp.gate_up_proj.weight", {2 * inter, hidden},
                                  {&w.gate_proj, &w.up_proj}));
    tensors.push_back(bf16_tensor(p + "mlp.down_proj.weight", {hidden, inter}, {&w.down_proj}));
  }
  tensors.push_back(bf16_tensor("model.norm.weight", {hidden}, {&weights.final_norm}));
  tensors.push_back(bf16_tensor("lm_head.weight", {m.vocab_size, hidden}, {&weights.lm_head}));
  std::filesystem::create_directories(folder);
  write_safetensors(folder / "model.safetensors", tensors, {{"format", "pt"}});
  write_json_file(folder / "config.json", config.hf_config);
}

void expect_same_weights(const LlamaWeights& got, const LlamaWeights& want,
                         const LlamaConfig& config) {
  for (const WeightSpec& spec : llama_weight_specs(config)) {
    EXPECT_EQ(got.at(spec), want.at(spec)) << spec.name;
  }
}

TEST(FamilySpec, ConfigsGetTheirFamilyByModelType) {
  auto family_of = [](nlohmann::json config) {
    return std::string(family_spec(parse_model_config(config, "t", "test")).name);
  };
  nlohmann::json llama = testing::tiny_llama_config_json();
  EXPECT_EQ(family_of(llama), "llama");
  EXPECT_EQ(family_of(testing::tiny_qwen_config_json()), "qwen2");
  EXPECT_EQ(family_of(as_phi3(llama)), "phi3");
  llama["model_type"] = "mistral";
  EXPECT_EQ(family_of(llama), "mistral");
  llama["model_type"] = "some_new_llama";  // any other dense model_type runs as a Llama
  EXPECT_EQ(family_of(llama), "llama");
  EXPECT_EQ(family_of(testing::tiny_mixtral_config_json()), "mixtral");
  EXPECT_EQ(family_of(testing::tiny_qwen_moe_config_json(true)), "qwen2_moe");
  nlohmann::json moe = testing::tiny_mixtral_config_json();
  moe["model_type"] = "some_new_moe";  // any other MoE: Mixtral's tensor names
  EXPECT_EQ(family_of(moe), "mixtral");
  // Every family has a description and the default one is last.
  for (const FamilySpec& spec : family_specs()) EXPECT_GT(std::string(spec.covers).size(), 20u);
  EXPECT_TRUE(family_specs().back().model_types.empty());
}

TEST(FamilySpec, ShippedModelsCountWhatThePredictorCounts) {
  // The spec's tensors and ModelConfig's parameter formulas (the predictor's memory and bytes)
  // are written apart; they must agree on every shipped model the engine runs.
  int checked = 0;
  for (const std::string& name : known_models()) {
    const ModelConfig m = load_model(name);
    if (m.gpt_style) continue;
    EXPECT_EQ(spec_parameter_count(family_spec(m), m), m.total_params()) << name;
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

TEST(FamilySpec, LlamaTensorsByHand) {
  const LlamaConfig config = parse_llama_config(testing::tiny_qwen_config_json(), "q", "test");
  const std::vector<WeightSpec> specs = llama_weight_specs(config);
  // Embedding, 2 layers of (2 norms, q/k/v, 3 biases, o, gate/up/down), final norm, LM head.
  ASSERT_EQ(specs.size(), 1u + 2 * 12 + 2);
  EXPECT_EQ(specs[2].name, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(specs[2].shape, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(specs[2].part.shard, Shard::rows);
  EXPECT_TRUE(specs[2].part.quantizable);
  EXPECT_EQ(specs[2].part.group, FusedGroup::qkv);
  EXPECT_EQ(specs[5].name, "model.layers.0.self_attn.q_proj.bias");
  EXPECT_EQ(specs[5].part.shard, Shard::rows);
  EXPECT_FALSE(specs[5].part.quantizable);
  EXPECT_EQ(specs[8].role, WeightRole::o_proj);
  EXPECT_EQ(specs[8].part.shard, Shard::columns);
  EXPECT_EQ(specs.back().role, WeightRole::lm_head);
  EXPECT_EQ(specs.back().part.shard, Shard::vocab_rows);
  for (const WeightSpec& spec : specs) {
    EXPECT_EQ(spec.stored_name, spec.name);  // nothing fused in a Qwen2 checkpoint
    EXPECT_EQ(spec.stored_row, 0);
  }
}

TEST(FamilySpec, Phi3StacksQkvAndGateUp) {
  const LlamaConfig phi3 = parse_llama_config(as_phi3(tiny_untied_llama_json()), "phi", "test");
  const std::vector<WeightSpec> specs = llama_weight_specs(phi3);
  ASSERT_EQ(specs.size(), 1u + 2 * 9 + 2);  // each layer: 2 norms, q/k/v, o, gate/up/down
  const WeightSpec& k = specs[3];
  EXPECT_EQ(k.role, WeightRole::k_proj);
  EXPECT_EQ(k.stored_name, "model.layers.0.self_attn.qkv_proj.weight");
  EXPECT_EQ(k.name, "model.layers.0.self_attn.qkv_proj.weight:k_proj");
  EXPECT_EQ(k.stored_row, 64);  // after q's 4 heads of 16
  EXPECT_EQ(specs[4].stored_row, 64 + 32);
  const WeightSpec& up = specs[8];
  EXPECT_EQ(up.role, WeightRole::up_proj);
  EXPECT_EQ(up.stored_name, "model.layers.0.mlp.gate_up_proj.weight");
  EXPECT_EQ(up.stored_row, 128);
  const std::vector<CheckpointTensor> tensors = checkpoint_tensors(specs);
  ASSERT_EQ(tensors.size(), 1u + 2 * 6 + 2);
  EXPECT_EQ(tensors[2].name, "model.layers.0.self_attn.qkv_proj.weight");
  EXPECT_EQ(tensors[2].shape, (std::vector<int64_t>{64 + 2 * 32, 64}));
  EXPECT_EQ(tensors[2].specs, (std::vector<size_t>{2, 3, 4}));
  EXPECT_EQ(tensors[5].shape, (std::vector<int64_t>{2 * 128, 64}));
  EXPECT_EQ(spec_parameter_count(family_spec(phi3.model), phi3.model), phi3.model.total_params());
}

TEST(FamilySpec, Phi3CheckpointIsTheLlamaItStacks) {
  ScratchDir dir("phi3");
  const LlamaConfig llama = parse_llama_config(tiny_untied_llama_json(), "llama", "test");
  const LlamaConfig phi3 = parse_llama_config(as_phi3(tiny_untied_llama_json()), "phi", "test");
  const LlamaWeights weights = random_llama_weights(llama, 11);
  write_phi3_checkpoint(dir / "phi3", phi3, weights);

  const LlamaModel loaded = load_llama_model(dir / "phi3");
  expect_same_weights(loaded.weights, weights, llama);

  // The same logits, prompt and decode, as the Llama.
  CpuBackend as_llama(llama, weights, 4, 16);
  CpuBackend as_phi(loaded.config, loaded.weights, 4, 16);
  const std::vector<int32_t> tokens = {5, 17, 200, 3, 99, 42, 7};
  const SequenceChunk chunk{tokens, 0, {0, 1}, true};
  const ForwardResult want = as_llama.forward({{chunk}});
  const ForwardResult got = as_phi.forward({{chunk}});
  for (int64_t r = 0; r < static_cast<int64_t>(tokens.size()); ++r) {
    const auto a = got.row(r), b = want.row(r);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << "row " << r;
  }

  // The GPU loader's source cuts each part out of its stacked tensor, whole or sharded 2 ways.
  const Checkpoint checkpoint = Checkpoint::open(dir / "phi3");
  const TensorSource source = checkpoint_tensor_source(checkpoint);
  const TensorSource random = random_tensor_source(llama, 11);
  const std::vector<WeightSpec> llama_specs = llama_weight_specs(llama);
  const std::vector<WeightSpec> phi_specs = llama_weight_specs(phi3);
  ASSERT_EQ(llama_specs.size(), phi_specs.size());
  for (size_t i = 0; i < phi_specs.size(); ++i) {
    EXPECT_EQ(source(phi_specs[i]), random(llama_specs[i])) << phi_specs[i].name;
  }
  const std::vector<WeightSpec> rank_llama = llama_weight_specs(rank_config(llama, 2));
  const std::vector<WeightSpec> rank_phi = llama_weight_specs(rank_config(phi3, 2));
  for (int64_t rank = 0; rank < 2; ++rank) {
    const TensorSource phi_shard = sharded_tensor_source(source, phi3, rank, 2);
    const TensorSource llama_shard = sharded_tensor_source(random, llama, rank, 2);
    for (size_t i = 0; i < rank_phi.size(); ++i) {
      EXPECT_EQ(phi_shard(rank_phi[i]), llama_shard(rank_llama[i])) << rank_phi[i].name;
    }
  }
}

TEST(FamilySpec, Phi3InitWeightsWritesTheStackedTensors) {
  ScratchDir dir("phi3_init");
  const LlamaConfig phi3 = parse_llama_config(as_phi3(tiny_untied_llama_json()), "phi", "test");
  InitWeightsOptions options;
  options.out_dir = dir / "ckpt";
  options.seed = 5;
  const InitWeightsResult result = init_weights(phi3, options);
  EXPECT_EQ(result.parameters, phi3.model.total_params());
  EXPECT_EQ(result.tensors, 1 + 2 * 6 + 2);
  SafetensorsFile file(options.out_dir / "model.safetensors");
  ASSERT_NE(file.find("model.layers.1.self_attn.qkv_proj.weight"), nullptr);
  EXPECT_EQ(file.find("model.layers.1.self_attn.qkv_proj.weight")->shape,
            (std::vector<int64_t>{128, 64}));
  EXPECT_EQ(file.find("model.layers.1.self_attn.q_proj.weight"), nullptr);
  // What it wrote loads back as the weights random_llama_weights draws in memory.
  const LlamaModel loaded = load_llama_model(options.out_dir);
  expect_same_weights(loaded.weights, random_llama_weights(phi3, 5), phi3);
}

// Qwen3: the Llama layer plus an RMSNorm over each query and key head before RoPE; its spec adds
// q_norm and k_norm ([head_dim], replicated under TP, never quantized) and both forward passes
// the op. The CPU reference against the double forward, and against the same weights without
// the norms (they must matter).
TEST(FamilySpec, Qwen3NormsEveryQueryAndKeyHead) {
  nlohmann::json json = tiny_untied_llama_json();
  json["architectures"] = {"Qwen3ForCausalLM"};
  json["model_type"] = "qwen3";
  const LlamaConfig qwen3 = parse_llama_config(json, "qwen3", "test");
  EXPECT_STREQ(family_spec(qwen3.model).name, "qwen3");
  EXPECT_TRUE(family_spec(qwen3.model).ops.qk_norm);
  const std::vector<WeightSpec> specs = llama_weight_specs(qwen3);
  const auto q_norm = std::find_if(specs.begin(), specs.end(), [](const WeightSpec& s) {
    return s.name == "model.layers.1.self_attn.q_norm.weight";
  });
  ASSERT_NE(q_norm, specs.end());
  EXPECT_EQ(q_norm->shape, (std::vector<int64_t>{16}));
  EXPECT_EQ(q_norm->part.shard, Shard::replicated);
  EXPECT_FALSE(q_norm->part.quantizable);
  // Two norms of head_dim per layer more than the Llama of the same shapes, in the spec and in
  // the predictor's count.
  const LlamaConfig llama = parse_llama_config(tiny_untied_llama_json(), "llama", "test");
  EXPECT_EQ(qwen3.model.total_params(), llama.model.total_params() + 2 * 2 * 16);
  EXPECT_EQ(spec_parameter_count(family_spec(qwen3.model), qwen3.model),
            qwen3.model.total_params());

  const LlamaWeights weights = random_llama_weights(qwen3, 9);
  const int64_t hidden = qwen3.model.hidden_size, inter = qwen3.model.intermediate_size;
  const double eps = qwen3.rms_norm_eps;
  auto dense_mlp = [&](testing::Matrix& x, int64_t n, const LayerWeights& w) {
    const testing::Matrix h = testing::rms_norm(x, n, w.post_attention_layernorm, eps);
    const testing::Matrix out =
        testing::swiglu(h, n, w.gate_proj, w.up_proj, w.down_proj, hidden, inter);
    for (size_t i = 0; i < x.size(); ++i) x[i] += out[i];
  };
  std::vector<int32_t> tokens;
  for (int32_t i = 0; i < 17; ++i) tokens.push_back((i * 53 + 7) % 256);
  CpuBackend backend(qwen3, weights, 4, 16);
  const ForwardResult got = backend.forward({{SequenceChunk{tokens, 0, {0, 1, 2, 3, 4}, true}}});
  testing::expect_logits_match(
      got.logits, testing::double_forward_logits(qwen3, weights, tokens, dense_mlp), "qwen3");
  testing::expect_pieces_equal_one_prefill(qwen3, weights, tokens);

  LlamaWeights without = weights;
  for (LayerWeights& layer : without.layers) layer.q_norm.clear(), layer.k_norm.clear();
  CpuBackend plain(llama, without, 4, 16);
  const ForwardResult other = plain.forward({{SequenceChunk{tokens, 0, {0, 1, 2, 3, 4}, true}}});
  double largest_difference = 0;
  for (size_t i = 0; i < other.logits.size(); ++i) {
    largest_difference =
        std::max(largest_difference, std::fabs(double{other.logits[i]} - got.logits[i]));
  }
  EXPECT_GT(largest_difference, 0.05);
}

// Configs whose family would not match what they describe are refused, naming the problem:
// a named family of the other kind (its layer's ops would be lost to the default family), a
// mixture of experts of a model_type no family names, QKV biases with a fused qkv_proj.
TEST(FamilySpec, ConfigsThatNoFamilyDescribesAreRefused) {
  nlohmann::json qwen3_moe = testing::tiny_llama_config_json();
  qwen3_moe["model_type"] = "qwen3_moe";  // no experts
  testing::expect_input_error([&] { parse_llama_config(qwen3_moe, "q", "cfg"); },
                              {"cfg", "qwen3_moe without experts"});
  nlohmann::json qwen3 = testing::tiny_qwen_moe_config_json(true);
  qwen3["model_type"] = "qwen3";  // experts
  testing::expect_input_error([&] { parse_llama_config(qwen3, "q", "cfg"); },
                              {"qwen3 with experts"});
  nlohmann::json unknown = testing::tiny_mixtral_config_json();
  unknown["model_type"] = "some_new_moe";
  testing::expect_input_error([&] { parse_llama_config(unknown, "u", "cfg"); },
                              {"some_new_moe", "mixtral, qwen2_moe and qwen3_moe"});
  nlohmann::json biased = as_phi3(tiny_untied_llama_json());
  biased["attention_bias"] = true;
  testing::expect_input_error([&] { parse_llama_config(biased, "p", "cfg"); },
                              {"attention_bias", "phi3"});
}

TEST(FamilySpec, FusedCheckpointsAreNotGptqQuantized) {
  nlohmann::json config = as_phi3(tiny_untied_llama_json());
  config["quantization_config"] = {{"quant_method", "gptq"},
                                   {"bits", 4},
                                   {"group_size", 32},
                                   {"desc_act", false},
                                   {"sym", true}};
  testing::expect_input_error([&] { parse_llama_config(config, "phi", "test"); },
                              {"GPTQ", "phi3", "qkv_proj"});
  nlohmann::json partial = tiny_untied_llama_json();
  partial["partial_rotary_factor"] = 0.5;
  testing::expect_input_error([&] { parse_llama_config(partial, "p", "test"); },
                              {"partial_rotary_factor"});
}

}  // namespace
}  // namespace inferlab::engine
