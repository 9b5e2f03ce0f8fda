// A mixture of experts saved as transformers 5 saves it (the router as mlp.gate, each layer's
// experts stacked: mlp.experts.gate_up_proj [E, 2I, H], gate rows then up rows an expert, and
// mlp.experts.down_proj [E, H, I]) loads to the weights of the same model saved the Hub's way
// (an expert a tensor), gives its logits bit for bit, and gives the GPU loader's sources,
// whole and sharded, the same tensors.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bf16_tensor_data.hpp"
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
#include "util/json_file.hpp"

namespace inferlab::engine {
namespace {

using testing::bf16_tensor;
using testing::ScratchDir;

// `weights` (drawn for the Hub's layout) written by hand in transformers 5's: every tensor
// under its Hub name but the router and the experts.
void write_stacked_checkpoint(const std::filesystem::path& folder, const LlamaConfig& config,
                              const LlamaWeights& weights) {
  const ModelConfig& m = config.model;
  const int64_t experts = m.num_experts, inter = m.intermediate_size, hidden = m.hidden_size;
  std::vector<TensorData> tensors;
  for (const WeightSpec& spec : llama_weight_specs(config)) {
    if (spec.role == WeightRole::router || spec.expert >= 0) continue;
    tensors.push_back(bf16_tensor(spec.name, spec.shape, {&weights.at(spec)}));
  }
  for (int64_t l = 0; l < m.num_layers; ++l) {
    const LayerWeights& w = weights.layers[static_cast<size_t>(l)];
    const std::string p = "model.layers." + std::to_string(l) + ".mlp.";
    std::vector<const std::vector<float>*> gate_up, down;
    for (const auto& e : w.experts) {
      gate_up.insert(gate_up.end(), {&e.gate_proj, &e.up_proj});
      down.push_back(&e.down_proj);
    }
    tensors.push_back(bf16_tensor(p + "gate.weight", {experts, hidden}, {&w.router}));
    tensors.push_back(
        bf16_tensor(p + "experts.gate_up_proj", {experts, 2 * inter, hidden}, gate_up));
    tensors.push_back(bf16_tensor(p + "experts.down_proj", {experts, hidden, inter}, down));
  }
  std::filesystem::create_directories(folder);
  write_safetensors(folder / "model.safetensors", tensors, {{"format", "pt"}});
  write_json_file(folder / "config.json", config.hf_config);
}

void expect_stacked_loads_as_per_expert(const nlohmann::json& json, const std::string& name) {
  SCOPED_TRACE(name);
  ScratchDir dir("stacked_" + name);
  const LlamaConfig hub = parse_llama_config(json, name, "test");
  ASSERT_FALSE(hub.moe.stacked_experts);
  // bf16 values, as a checkpoint holds them.
  LlamaWeights weights = random_llama_weights(hub, 13);
  write_stacked_checkpoint(dir / "ckpt", hub, weights);

  const LlamaModel loaded = load_llama_model(dir / "ckpt");
  EXPECT_TRUE(loaded.config.moe.stacked_experts);
  for (const WeightSpec& spec : llama_weight_specs(hub)) {
    EXPECT_EQ(loaded.weights.at(spec), weights.at(spec)) << spec.name;
  }
  CpuBackend as_hub(hub, weights, 4, 16);
  CpuBackend as_stacked(loaded.config, loaded.weights, 4, 16);
  const SequenceChunk chunk{{5, 17, 90, 3, 44, 42, 7}, 0, {0, 1}, true};
  EXPECT_EQ(as_stacked.forward({{chunk}}).logits, as_hub.forward({{chunk}}).logits);

  // The GPU loader's source cuts every expert's part out of its stacked tensor, whole and for
  // each of 2 ranks (half of every expert's channels).
  const Checkpoint checkpoint = Checkpoint::open(dir / "ckpt");
  check_llama_checkpoint(checkpoint, loaded.config);
  const TensorSource source = checkpoint_tensor_source(checkpoint);
  const TensorSource random = random_tensor_source(hub, 13);
  const std::vector<WeightSpec> hub_specs = llama_weight_specs(hub);
  const std::vector<WeightSpec> stacked_specs = llama_weight_specs(loaded.config);
  ASSERT_EQ(hub_specs.size(), stacked_specs.size());
  auto same = [](const WeightSpec& a, const WeightSpec& b) {
    return a.role == b.role && a.layer == b.layer && a.expert == b.expert && a.shape == b.shape;
  };
  for (const WeightSpec& s : stacked_specs) {
    const WeightSpec* h = nullptr;
    for (const WeightSpec& c : hub_specs) h = same(c, s) ? &c : h;
    ASSERT_NE(h, nullptr) << s.name;
    EXPECT_EQ(source(s), random(*h)) << s.name;
  }
  for (int64_t rank = 0; rank < 2; ++rank) {
    const TensorSource stacked_shard = sharded_tensor_source(source, loaded.config, rank, 2);
    const TensorSource hub_shard = sharded_tensor_source(random, hub, rank, 2);
    const std::vector<WeightSpec> rank_hub = llama_weight_specs(rank_config(hub, 2));
    for (const WeightSpec& s : llama_weight_specs(rank_config(loaded.config, 2))) {
      for (const WeightSpec& h : rank_hub) {
        if (same(h, s)) EXPECT_EQ(stacked_shard(s), hub_shard(h)) << s.name << " rank " << rank;
      }
    }
  }
}

TEST(StackedExperts, TransformersFiveCheckpointsLoadAsTheHubs) {
  expect_stacked_loads_as_per_expert(testing::tiny_mixtral_config_json(), "mixtral");
  expect_stacked_loads_as_per_expert(testing::tiny_qwen_moe_config_json(true), "qwen2_moe");
}

// The stacked tensors have 3 dimensions; one of another shape is named in the error.
TEST(StackedExperts, AStackOfTheWrongShapeIsNamed) {
  ScratchDir dir("stacked_wrong");
  nlohmann::json json = testing::tiny_mixtral_config_json();
  const LlamaConfig hub = parse_llama_config(json, "mixtral", "test");
  write_stacked_checkpoint(dir / "ckpt", hub, random_llama_weights(hub, 2));
  json["intermediate_size"] = 40;  // the config now disagrees with the stacks
  write_json_file(dir / "ckpt" / "config.json", json);
  try {
    load_llama_model(dir / "ckpt");
    FAIL() << "loaded";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("model.layers.0.mlp.experts.gate_up_proj is [4, 96, 32], expected "
                        "[4, 80, 32]"),
              std::string::npos)
        << what;
  }
}

// init-weights writes the layout the config names: transformers 5's stacks when asked.
TEST(StackedExperts, InitWeightsWritesTheStacks) {
  ScratchDir dir("stacked_init");
  LlamaConfig config = parse_llama_config(testing::tiny_mixtral_config_json(), "mixtral", "test");
  config.moe.stacked_experts = true;
  InitWeightsOptions options;
  options.out_dir = dir / "ckpt";
  options.seed = 4;
  init_weights(config, options);
  SafetensorsFile file(options.out_dir / "model.safetensors");
  ASSERT_NE(file.find("model.layers.1.mlp.experts.down_proj"), nullptr);
  EXPECT_EQ(file.find("model.layers.1.mlp.experts.down_proj")->shape,
            (std::vector<int64_t>{4, 32, 48}));
  EXPECT_EQ(file.find("model.layers.1.block_sparse_moe.experts.0.w2.weight"), nullptr);
  const LlamaModel loaded = load_llama_model(options.out_dir);
  EXPECT_TRUE(loaded.config.moe.stacked_experts);
  const LlamaWeights drawn = random_llama_weights(config, 4);
  for (const WeightSpec& spec : llama_weight_specs(config)) {
    EXPECT_EQ(loaded.weights.at(spec), drawn.at(spec)) << spec.name;
  }
}

}  // namespace
}  // namespace inferlab::engine
