#pragma once
#include <cstdint>
#include <filesystem>
#include <vector>

#include "engine/llama_config.hpp"
#include "engine/llama_weights.hpp"

namespace inferlab::engine {

struct InitWeightsOptions {
  std::filesystem::path out_dir;
  uint64_t seed = 1;
  std::filesystem::path tokenizer_json;         // copied when not empty
  std::filesystem::path tokenizer_config_json;  // copied when not empty
  uint64_t max_shard_bytes = 5'000'000'000;     // above this: shards + index (as HF saves)
};

struct InitWeightsResult {
  std::vector<std::filesystem::path> files;  // everything written, in order
  uint64_t weight_bytes = 0;                 // tensor data, all shards
  int64_t tensors = 0;
  int64_t parameters = 0;
};

// Writes a Hugging Face checkpoint folder with random weights at the config's real shapes:
// config.json (config.hf_config as given), model.safetensors (BF16, metadata format "pt") or
// shards model-0000i-of-0000n.safetensors of at most max_shard_bytes with
// model.safetensors.index.json, generation_config.json (bos/eos from the config), and the
// tokenizer files when given. Earlier model*.safetensors* files in out_dir are removed first.
//
// Values are streamed tensor by tensor (no whole-model buffer). Each tensor has its own
// xoshiro256** generator seeded from (seed, FNV-1a of its name), so a tensor's values do not
// depend on sharding or order; normal draws are Xoshiro256::approx_normal (Irwin-Hall, n = 4).
// Init: embeddings and lm_head N(0, 1/hidden), projections N(0, 1/fan_in) (unit-scale
// activations at every width), q/k/v biases N(0, 0.1^2), norm weights 1 + N(0, 0.1^2) (not all
// ones, so a norm that forgets its weight is caught). Logits then come out about N(0, 1).
InitWeightsResult init_weights(const LlamaConfig& config, const InitWeightsOptions& options);

// The same weights in memory (bf16-rounded, as fp32): what loading init_weights' output with
// the same seed gives, without the files (for `--model NAME` runs at the real shapes).
LlamaWeights random_llama_weights(const LlamaConfig& config, uint64_t seed);

// One tensor of those weights as bf16 bits (what init_weights writes for it).
std::vector<uint16_t> random_tensor_bf16(const WeightSpec& spec, const ModelConfig& model,
                                         uint64_t seed);

}  // namespace inferlab::engine
