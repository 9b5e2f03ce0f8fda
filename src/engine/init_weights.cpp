#include "engine/init_weights.hpp"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "engine/bf16.hpp"
#include "engine/checkpoint_files.hpp"
#include "engine/llama_weights.hpp"
#include "engine/safetensors_writer.hpp"
#include "util/error.hpp"
#include "util/rng.hpp"

namespace inferlab::engine {

namespace {

struct Distribution {
  float mean;
  float stddev;
};

Distribution init_of(const WeightSpec& spec, const ModelConfig& m) {
  switch (spec.part.init) {
    case Init::embedding:
      return {0.0f, static_cast<float>(1.0 / std::sqrt(static_cast<double>(m.hidden_size)))};
    case Init::norm:
      return {1.0f, 0.1f};
    case Init::bias:
      return {0.0f, 0.1f};
    case Init::projection:  // [out, in]
      break;
  }
  return {0.0f, static_cast<float>(1.0 / std::sqrt(static_cast<double>(spec.shape.back())))};
}

// The bf16 values of one tensor, chunk by chunk, to `sink`.
template <typename Sink>
void generate_tensor(const WeightSpec& spec, const ModelConfig& m, uint64_t seed, Sink sink) {
  uint64_t mix = seed ^ fnv1a64(spec.name);
  Xoshiro256 rng(splitmix64(mix));
  const Distribution dist = init_of(spec, m);
  constexpr int64_t kChunk = 1 << 20;
  std::vector<uint16_t> buffer(static_cast<size_t>(std::min(kChunk, spec.elements())));
  const int64_t total = spec.elements();
  for (int64_t done = 0; done < total; done += kChunk) {
    const int64_t count = std::min(kChunk, total - done);
    for (int64_t i = 0; i < count; ++i) {
      buffer[static_cast<size_t>(i)] = float_to_bf16(dist.mean + dist.stddev * rng.approx_normal());
    }
    sink(std::span<const uint16_t>(buffer.data(), static_cast<size_t>(count)));
  }
}

}  // namespace

InitWeightsResult init_weights(const LlamaConfig& config, const InitWeightsOptions& options) {
  namespace fs = std::filesystem;
  prepare_checkpoint_folder(options.out_dir, "init-weights");

  InitWeightsResult result;
  const auto specs = llama_weight_specs(config);
  // The checkpoint's tensors (a fused one holds several specs, generated one after the other).
  const auto tensors = checkpoint_tensors(specs);
  auto elements = [](const CheckpointTensor& tensor) {
    int64_t count = 1;
    for (int64_t extent : tensor.shape) count *= extent;
    return count;
  };
  // Shards: tensors in HF order, a new shard when the next tensor would pass the bound.
  std::vector<std::vector<size_t>> shards(1);
  uint64_t shard_bytes = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    uint64_t bytes = 2 * static_cast<uint64_t>(elements(tensors[i]));
    if (!shards.back().empty() && shard_bytes + bytes > options.max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(i);
    shard_bytes += bytes;
  }

  const fs::path config_path = options.out_dir / "config.json";
  write_json_file(config_path, config.hf_config);
  result.files.push_back(config_path);

  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t s = 0; s < shards.size(); ++s) {
    std::string file_name = kSafetensorsFile;
    if (shards.size() > 1) {
      char name[64];
      std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", s + 1, shards.size());
      file_name = name;
    }
    std::vector<TensorSpec> tensor_specs;
    for (size_t i : shards[s])
      tensor_specs.push_back({tensors[i].name, TensorDType::bf16, tensors[i].shape});
    const fs::path path = options.out_dir / file_name;
    SafetensorsWriter writer(path, tensor_specs, {{"format", "pt"}});
    for (size_t i : shards[s]) {
      for (size_t part : tensors[i].specs) {
        generate_tensor(
            specs[part], config.model, options.seed, [&](std::span<const uint16_t> chunk) {
              writer.write({reinterpret_cast<const uint8_t*>(chunk.data()), chunk.size() * 2});
            });
      }
      weight_map[tensors[i].name] = file_name;
      result.weight_bytes += 2 * static_cast<uint64_t>(elements(tensors[i]));
      result.parameters += elements(tensors[i]);
      ++result.tensors;
    }
    writer.finish();
    result.files.push_back(path);
  }
  if (shards.size() > 1) {
    const fs::path index_path = options.out_dir / kSafetensorsIndexFile;
    write_json_file(index_path, {{"metadata", {{"total_size", result.weight_bytes}}},
                                 {"weight_map", weight_map}});
    result.files.push_back(index_path);
  }

  result.files.push_back(write_generation_config(options.out_dir, config));

  if (!options.tokenizer_json.empty()) {
    copy_into(options.tokenizer_json, options.out_dir / "tokenizer.json", "tokenizer file");
    result.files.push_back(options.out_dir / "tokenizer.json");
  }
  if (!options.tokenizer_config_json.empty()) {
    copy_into(options.tokenizer_config_json, options.out_dir / "tokenizer_config.json",
              "tokenizer config file");
    result.files.push_back(options.out_dir / "tokenizer_config.json");
  }
  return result;
}

std::vector<uint16_t> random_tensor_bf16(const WeightSpec& spec, const ModelConfig& model,
                                         uint64_t seed) {
  std::vector<uint16_t> bits;
  bits.reserve(static_cast<size_t>(spec.elements()));
  generate_tensor(spec, model, seed, [&](std::span<const uint16_t> chunk) {
    bits.insert(bits.end(), chunk.begin(), chunk.end());
  });
  return bits;
}

LlamaWeights random_llama_weights(const LlamaConfig& config, uint64_t seed) {
  LlamaWeights weights;
  weights.layers.resize(static_cast<size_t>(config.model.num_layers));
  for (const auto& spec : llama_weight_specs(config)) {
    std::vector<float> values;
    values.reserve(static_cast<size_t>(spec.elements()));
    generate_tensor(spec, config.model, seed, [&](std::span<const uint16_t> chunk) {
      for (uint16_t bits : chunk) values.push_back(bf16_to_float(bits));
    });
    weights.set(spec, std::move(values));
  }
  return weights;
}

}  // namespace inferlab::engine
