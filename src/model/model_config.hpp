#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace inferlab {

struct RopeScaling {
  std::string type;  // "llama3", "linear", "dynamic", "yarn"
  double factor = 1.0;
};

// A decoder-only transformer as its Hugging Face config.json describes it. One code path serves
// Llama, Mistral, Qwen2 (QKV bias) and Mixtral (MoE MLP); the GPT-2/GPT-3 family (model_type
// "gpt2": LayerNorm, GELU MLP, full multi-head attention, learned positions, biases) sets
// gpt_style.
struct ModelConfig {
  std::string name;
  std::string model_type;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;  // per expert for MoE
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;
  bool gpt_style = false;   // LayerNorm + GELU MLP + learned positions + biases everywhere
  int64_t num_experts = 0;  // 0: dense MLP
  int64_t experts_per_token = 0;
  // Measured routing (model/moe_routing.hpp): the experts one sequence of so many tokens reaches
  // in a layer, by increasing tokens, and where it was measured; empty: uniform routing.
  std::vector<std::pair<int64_t, double>> moe_sequence_reached;
  std::string moe_routing_source;
  double rope_theta = 10000.0;
  std::optional<RopeScaling> rope_scaling;

  bool is_moe() const { return num_experts > 0; }
  int64_t q_dim() const { return num_heads * head_dim; }
  int64_t kv_dim() const { return num_kv_heads * head_dim; }

  // Parameter counts (elements), whole model, no sharding.
  int64_t attention_params_per_layer() const;
  int64_t mlp_params_per_layer() const;  // all experts plus the router
  // Two per layer (four in GPT-2), plus Qwen3's per-head q/k norms (its family spec's qk_norm).
  int64_t norm_params_per_layer() const;
  int64_t embedding_params() const {
    return (vocab_size + (gpt_style ? max_position_embeddings : 0)) * hidden_size;
  }
  int64_t lm_head_params() const { return tie_word_embeddings ? 0 : vocab_size * hidden_size; }
  int64_t total_params() const;
  // Parameters touched by one token: attention, top-k experts, embedding row excluded.
  int64_t active_params_per_token() const;
};

// Parses a config.json object; missing or impossible fields are InputErrors naming `context`.
ModelConfig parse_model_config(const nlohmann::json& config, const std::string& name,
                               const std::string& context);
// A shipped name (data/models/<name>.json) or a path to a config.json.
ModelConfig load_model(const std::string& name_or_path);

// Reads {"num_experts", "experts_per_token", "sequence_experts_reached": [[tokens, experts],
// ...], "source"} for `model` into its moe_sequence_reached / moe_routing_source. InputError
// (naming `context`) when the counts do not match the model's, the list is empty, its tokens are
// not increasing positive counts, or an experts value is not finite or outside [top_k,
// min(num_experts, top_k x tokens)].
void attach_moe_routing(const nlohmann::json& routing, ModelConfig& model,
                        const std::string& context);

// data_dir()/routing/<model.name>.json attached when it exists (mixtures of experts only).
void attach_shipped_moe_routing(ModelConfig& model);

std::vector<std::string> known_models();

}  // namespace inferlab
