#include "model/model_config.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "model/family_spec.hpp"
#include "util/data_dir.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab {

int64_t ModelConfig::attention_params_per_layer() const {
  int64_t qkv = hidden_size * (q_dim() + 2 * kv_dim());
  int64_t bias = qkv_bias ? q_dim() + 2 * kv_dim() : 0;
  if (gpt_style) bias += hidden_size;  // the output projection's bias
  return qkv + bias + q_dim() * hidden_size;
}

int64_t ModelConfig::mlp_params_per_layer() const {
  if (gpt_style) return 2 * hidden_size * intermediate_size + intermediate_size + hidden_size;
  int64_t one_mlp = 3 * hidden_size * intermediate_size;  // gate, up, down
  if (!is_moe()) return one_mlp;
  return num_experts * one_mlp + hidden_size * num_experts;  // experts + router
}

int64_t ModelConfig::norm_params_per_layer() const {
  if (gpt_style) return 4 * hidden_size;
  return 2 * hidden_size + (family_spec(*this).ops.qk_norm ? 2 * head_dim : 0);
}

int64_t ModelConfig::total_params() const {
  int64_t per_layer =
      attention_params_per_layer() + mlp_params_per_layer() + norm_params_per_layer();
  return embedding_params() + num_layers * per_layer + hidden_size + lm_head_params();
}

int64_t ModelConfig::active_params_per_token() const {
  int64_t mlp =
      is_moe() ? experts_per_token * 3 * hidden_size * intermediate_size + hidden_size * num_experts
               : mlp_params_per_layer();
  return num_layers * (attention_params_per_layer() + mlp + norm_params_per_layer()) + hidden_size +
         vocab_size * hidden_size;
}

namespace {
// GPT-2 style config.json (n_embd, n_layer, n_head, n_inner, n_positions).
ModelConfig parse_gpt_config(const nlohmann::json& config, const std::string& name,
                             const std::string& context) {
  constexpr int64_t kMaxDim = int64_t{1} << 24;
  ModelConfig m;
  m.name = name;
  m.model_type = "gpt2";
  m.gpt_style = true;
  m.hidden_size = require_count(config, "n_embd", context, 1, kMaxDim);
  m.num_layers = require_count(config, "n_layer", context, 1, 100000);
  m.num_heads = require_count(config, "n_head", context, 1, 65536);
  m.num_kv_heads = m.num_heads;
  if (m.hidden_size % m.num_heads != 0) {
    throw InputError(context + ": n_embd is not a multiple of n_head");
  }
  m.head_dim = m.hidden_size / m.num_heads;
  m.intermediate_size = config.contains("n_inner") && !config["n_inner"].is_null()
                            ? require_count(config, "n_inner", context, 1, kMaxDim)
                            : 4 * m.hidden_size;
  m.vocab_size = require_count(config, "vocab_size", context, 1, kMaxDim);
  m.max_position_embeddings = require_count(config, "n_positions", context, 1, int64_t{1} << 32);
  m.tie_word_embeddings = optional_bool(config, "tie_word_embeddings", true, context);
  m.qkv_bias = true;
  return m;
}
}  // namespace

ModelConfig parse_model_config(const nlohmann::json& config, const std::string& name,
                               const std::string& context) {
  if (!config.is_object()) throw InputError(context + ": expected a JSON object");
  if (optional_string(config, "model_type", "", context) == "gpt2" || config.contains("n_embd")) {
    return parse_gpt_config(config, name, context);
  }
  constexpr int64_t kMaxDim = int64_t{1} << 24;
  ModelConfig m;
  m.name = name;
  m.model_type = config.contains("model_type") && config["model_type"].is_string()
                     ? config["model_type"].get<std::string>()
                     : "llama";
  m.hidden_size = require_count(config, "hidden_size", context, 1, kMaxDim);
  m.intermediate_size = require_count(config, "intermediate_size", context, 1, kMaxDim);
  m.num_layers = require_count(config, "num_hidden_layers", context, 1, 100000);
  m.num_heads = require_count(config, "num_attention_heads", context, 1, 65536);
  m.num_kv_heads =
      config.contains("num_key_value_heads") && !config["num_key_value_heads"].is_null()
          ? require_count(config, "num_key_value_heads", context, 1, 65536)
          : m.num_heads;
  if (m.num_heads % m.num_kv_heads != 0) {
    throw InputError(context + ": num_attention_heads (" + std::to_string(m.num_heads) +
                     ") is not a multiple of num_key_value_heads (" +
                     std::to_string(m.num_kv_heads) + ")");
  }
  if (config.contains("head_dim") && !config["head_dim"].is_null()) {
    m.head_dim = require_count(config, "head_dim", context, 1, 65536);
  } else {
    if (m.hidden_size % m.num_heads != 0) {
      throw InputError(context +
                       ": hidden_size is not a multiple of num_attention_heads and "
                       "no head_dim is given");
    }
    m.head_dim = m.hidden_size / m.num_heads;
  }
  m.vocab_size = require_count(config, "vocab_size", context, 1, kMaxDim);
  m.max_position_embeddings =
      config.contains("max_position_embeddings")
          ? require_count(config, "max_position_embeddings", context, 1, int64_t{1} << 32)
          : 0;
  m.tie_word_embeddings = optional_bool(config, "tie_word_embeddings", false, context);
  // Qwen2 (and Qwen2-MoE) always has QKV bias; Llama-family configs say so with attention_bias.
  m.qkv_bias = m.model_type == "qwen2" || m.model_type == "qwen2_moe" ||
               optional_bool(config, "attention_bias", false, context);
  m.rope_theta = optional_number(config, "rope_theta", 10000.0, context);
  if (config.contains("rope_scaling") && config["rope_scaling"].is_object()) {
    const auto& scaling = config["rope_scaling"];
    RopeScaling rope;
    const char* type_key = scaling.contains("rope_type") ? "rope_type" : "type";
    rope.type = require_string(scaling, type_key, context + " rope_scaling");
    rope.factor = optional_number(scaling, "factor", 1.0, context + " rope_scaling");
    m.rope_scaling = rope;
  }
  // Mixtral: num_local_experts; Qwen2-MoE / Qwen3-MoE: num_experts, each expert
  // moe_intermediate_size wide (intermediate_size is the width of the dense MLP the family can
  // put between sparse layers).
  const char* experts_key =
      config.contains("num_local_experts") ? "num_local_experts" : "num_experts";
  if (config.contains(experts_key) && !config[experts_key].is_null()) {
    m.num_experts = require_count(config, experts_key, context, 1, 4096);
    m.experts_per_token = require_count(config, "num_experts_per_tok", context, 1, 4096);
    if (m.experts_per_token > m.num_experts) {
      throw InputError(context + ": num_experts_per_tok (" + std::to_string(m.experts_per_token) +
                       ") is more than the " + std::to_string(m.num_experts) + " experts (" +
                       experts_key + ")");
    }
  }
  // transformers 5 may write num_local_experts for Qwen-MoE too (its attribute map): the expert
  // width is moe_intermediate_size wherever a config gives one.
  if (m.is_moe() && config.contains("moe_intermediate_size")) {
    m.intermediate_size =
        optional_count(config, "moe_intermediate_size", m.intermediate_size, context, 1, kMaxDim);
  }
  return m;
}

namespace {
int64_t count_field(const nlohmann::json& j, const char* key, const std::string& context) {
  if (!j.contains(key) || !j[key].is_number_integer()) {
    throw InputError(context + ": missing integer field '" + key + "'");
  }
  return j[key].get<int64_t>();
}
}  // namespace

void attach_moe_routing(const nlohmann::json& routing, ModelConfig& model,
                        const std::string& context) {
  if (!routing.is_object()) throw InputError(context + ": not a JSON object");
  const int64_t experts = count_field(routing, "num_experts", context);
  const int64_t top_k = count_field(routing, "experts_per_token", context);
  if (experts != model.num_experts || top_k != model.experts_per_token) {
    throw InputError(context + ": routing of " + std::to_string(top_k) + " of " +
                     std::to_string(experts) + " experts for a model of " +
                     std::to_string(model.experts_per_token) + " of " +
                     std::to_string(model.num_experts));
  }
  const char* key = "sequence_experts_reached";
  if (!routing.contains(key) || !routing[key].is_array() || routing[key].empty()) {
    throw InputError(context + ": missing non-empty array '" + key + "'");
  }
  std::vector<std::pair<int64_t, double>> points;
  for (const auto& p : routing[key]) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number()) {
      throw InputError(context + ": each of '" + key + "' must be [tokens, experts]");
    }
    const int64_t tokens = p[0].get<int64_t>();
    const double reached = p[1].get<double>();
    if (tokens < 1 || (!points.empty() && tokens <= points.back().first)) {
      throw InputError(context + ": the tokens of '" + key + "' must be increasing counts");
    }
    const double most = static_cast<double>(std::min(experts, top_k * tokens));
    if (!std::isfinite(reached) || reached < static_cast<double>(top_k) || reached > most) {
      throw InputError(context + ": " + std::to_string(tokens) + " tokens cannot reach " +
                       std::to_string(reached) + " experts (" + std::to_string(top_k) + " to " +
                       std::to_string(static_cast<int64_t>(most)) + ")");
    }
    points.emplace_back(tokens, reached);
  }
  model.moe_sequence_reached = std::move(points);
  model.moe_routing_source = routing.value("source", std::string("(no source given)"));
}

void attach_shipped_moe_routing(ModelConfig& model) {
  if (!model.is_moe() || model.name.empty()) return;
  const std::filesystem::path path = data_dir() / "routing" / (model.name + ".json");
  if (!std::filesystem::exists(path)) return;
  attach_moe_routing(read_json_file(path, "routing"), model, "routing '" + path.string() + "'");
}

ModelConfig load_model(const std::string& name_or_path) {
  auto path = resolve_data_file(name_or_path, "models", "model");
  auto config = read_json_file(path, "model config");
  std::string name = std::filesystem::path(path).stem().string();
  if (name == "config") name = std::filesystem::path(path).parent_path().filename().string();
  ModelConfig model = parse_model_config(config, name, "model config '" + path.string() + "'");
  // (A shipped name only: a config of the same name elsewhere is another model.)
  const bool shipped = name_or_path.find('/') == std::string::npos &&
                       std::filesystem::path(name_or_path).extension() != ".json";
  if (shipped) attach_shipped_moe_routing(model);
  return model;
}

std::vector<std::string> known_models() {
  return data_names("models");
}

}  // namespace inferlab
