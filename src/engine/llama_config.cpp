#include "engine/llama_config.hpp"

#include <filesystem>

#include "engine/checkpoint.hpp"
#include "model/family_spec.hpp"
#include "util/data_dir.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab::engine {

namespace {

std::vector<int64_t> token_ids(const nlohmann::json& config, const char* key) {
  std::vector<int64_t> ids;
  if (!config.contains(key)) return ids;
  const auto& value = config[key];
  if (value.is_number_integer()) ids.push_back(value.get<int64_t>());
  if (value.is_array()) {
    for (const auto& id : value) {
      if (id.is_number_integer()) ids.push_back(id.get<int64_t>());
    }
  }
  return ids;
}

// The routing of a mixture-of-experts config, or an InputError for what the engine does not run.
MoeParams parse_moe(const nlohmann::json& config, const ModelConfig& m,
                    const std::string& context) {
  MoeParams moe;
  // Qwen's routing rule by model type (transformers 5 may write num_local_experts for it too);
  // other model types are refused before this (parse_llama_config).
  const bool qwen = m.model_type == "qwen2_moe" || m.model_type == "qwen3_moe";
  // Mixtral always renormalises (softmax of the top-k logits); Qwen only with norm_topk_prob.
  moe.renormalize_top_k = qwen ? optional_bool(config, "norm_topk_prob", false, context) : true;
  const std::string refusal = context + ": mixture of experts with ";
  const std::string supported =
      " is not supported (the engine runs routed SwiGLU experts in every layer)";
  constexpr int64_t kAny = int64_t{1} << 40;
  if (optional_count(config, "shared_expert_intermediate_size", 0, context, 0, kAny) > 0) {
    throw InputError(refusal + "a shared expert (shared_expert_intermediate_size)" + supported);
  }
  if (optional_count(config, "n_shared_experts", 0, context, 0, kAny) > 0) {
    throw InputError(refusal + "shared experts (n_shared_experts)" + supported);
  }
  if (optional_count(config, "decoder_sparse_step", 1, context, 1, kAny) > 1) {
    throw InputError(refusal + "dense layers between sparse ones (decoder_sparse_step)" +
                     supported);
  }
  if (config.contains("mlp_only_layers") && config["mlp_only_layers"].is_array() &&
      !config["mlp_only_layers"].empty()) {
    throw InputError(refusal + "dense layers (mlp_only_layers)" + supported);
  }
  return moe;
}

}  // namespace

LlamaConfig parse_llama_config(const nlohmann::json& config, const std::string& name,
                               const std::string& context) {
  LlamaConfig result;
  result.model = parse_model_config(config, name, context);
  result.gptq = parse_gptq_config(config, context);
  result.hf_config = config;
  const ModelConfig& m = result.model;
  if (m.gpt_style)
    throw InputError(context + ": GPT-2 style models are not supported by the engine");
  // The family's tensors must be what the config describes: a named family of the other kind
  // (qwen3_moe without experts, qwen3 with them) would lose its layer's ops to the default
  // family, and a mixture of experts of a model_type no family names would get Mixtral's tensor
  // names with a routing rule read from keys that may be Qwen's.
  const FamilySpec* named = named_family(m.model_type);
  if (named != nullptr && family_has_experts(*named) != m.is_moe()) {
    throw InputError(context + ": model_type " + m.model_type +
                     (m.is_moe() ? " with experts" : " without experts") +
                     " is not a family the engine knows");
  }
  if (named == nullptr && m.is_moe()) {
    throw InputError(context + ": a mixture of experts of model_type '" + m.model_type +
                     "' is not supported (the engine knows mixtral, qwen2_moe and qwen3_moe)");
  }
  if (m.qkv_bias && family_fuses_qkv(family_spec(m))) {
    throw InputError(context + ": attention_bias with " + family_spec(m).name +
                     "'s fused qkv_proj is not supported");
  }
  if (m.is_moe()) {
    result.moe = parse_moe(config, m, context);
    if (result.gptq) {
      throw InputError(context +
                       ": GPTQ-quantized mixture-of-experts checkpoints are not "
                       "supported; use the bf16 checkpoint");
    }
  }
  if (result.gptq) {
    for (const StoredTensor& tensor : family_spec(m).tensors) {
      if (tensor.parts.size() > 1) {
        throw InputError(context + ": GPTQ-quantized " + family_spec(m).name +
                         " checkpoints are not supported (" + tensor.name +
                         " fuses several projections); use the bf16 checkpoint");
      }
    }
  }
  // Phi-2-style partial rotary embeddings rotate only the first dimensions of each head.
  if (optional_number(config, "partial_rotary_factor", 1.0, context) != 1.0) {
    throw InputError(context +
                     ": partial_rotary_factor other than 1 is not supported (the engine rotates "
                     "every dimension of a head)");
  }
  if (config.contains("hidden_act") && config["hidden_act"] != "silu") {
    throw InputError(context + ": hidden_act " + config["hidden_act"].dump() +
                     " is not supported (the engine runs SiLU-gated MLPs)");
  }
  if (optional_bool(config, "mlp_bias", false, context)) {
    throw InputError(context + ": mlp_bias is not supported");
  }
  result.rms_norm_eps = optional_number(config, "rms_norm_eps", 1e-6, context);
  if (!(result.rms_norm_eps >= 0)) throw InputError(context + ": rms_norm_eps is negative");

  // transformers 4.x writes rope_theta and rope_scaling; 5.x writes one rope_parameters object
  // (rope_theta, rope_type and the scaling fields). ModelConfig reads only the former.
  const bool v5_rope = config.contains("rope_parameters") && config["rope_parameters"].is_object();
  const nlohmann::json* scaling = nullptr;
  std::string type;
  std::string scaling_context = context + " rope_scaling";
  result.rope.theta = m.rope_theta;
  if (v5_rope) {
    scaling = &config["rope_parameters"];
    scaling_context = context + " rope_parameters";
    result.rope.theta = optional_number(*scaling, "rope_theta", m.rope_theta, scaling_context);
    const char* type_key = scaling->contains("rope_type") ? "rope_type" : "type";
    type = scaling->contains(type_key) ? require_string(*scaling, type_key, scaling_context)
                                       : "default";
  } else if (m.rope_scaling) {
    scaling = &config["rope_scaling"];
    type = m.rope_scaling->type;
  }
  if (!(result.rope.theta > 1)) throw InputError(context + ": rope_theta must be above 1");
  if (scaling != nullptr && type != "default") {
    result.rope.factor = optional_number(*scaling, "factor", 1.0, scaling_context);
    if (!(result.rope.factor > 0)) throw InputError(scaling_context + ": factor must be positive");
    if (type == "llama3") {
      result.rope.kind = RopeParams::Kind::llama3;
      result.rope.low_freq_factor = require_number(*scaling, "low_freq_factor", scaling_context);
      result.rope.high_freq_factor = require_number(*scaling, "high_freq_factor", scaling_context);
      result.rope.original_max_position_embeddings =
          require_number(*scaling, "original_max_position_embeddings", scaling_context);
      if (!(result.rope.low_freq_factor > 0) ||
          !(result.rope.high_freq_factor > result.rope.low_freq_factor) ||
          !(result.rope.original_max_position_embeddings > 0)) {
        throw InputError(scaling_context +
                         ": needs 0 < low_freq_factor < high_freq_factor and a positive "
                         "original_max_position_embeddings");
      }
    } else if (type == "linear") {
      result.rope.kind = RopeParams::Kind::linear;
    } else {
      throw InputError(scaling_context + ": type '" + type +
                       "' is not supported (known: llama3, linear, default)");
    }
  }
  // Qwen2 configs carry sliding_window but apply it only with use_sliding_window.
  bool sliding = optional_bool(config, "use_sliding_window", m.model_type != "qwen2", context);
  if (sliding && config.contains("sliding_window") && !config["sliding_window"].is_null()) {
    result.sliding_window = require_count(config, "sliding_window", context, 1);
  }
  auto bos = token_ids(config, "bos_token_id");
  if (!bos.empty()) result.bos_token_id = bos.front();
  result.eos_token_ids = token_ids(config, "eos_token_id");
  return result;
}

namespace {
// Whether the checkpoint in `folder` stores `model`'s experts as transformers 5 saves them
// (FamilySpec::stacked_experts; layer 0's stacked gate/up names it), rather than as the Hub's
// checkpoints do (an expert a tensor). False for a folder without weights.
bool checkpoint_stacks_experts(const std::filesystem::path& folder, const ModelConfig& model) {
  const FamilySpec& family = family_spec(model);
  if (!model.is_moe() || family.stacked_experts.empty()) return false;
  bool weights = false;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    weights = weights || entry.path().extension() == ".safetensors";
  }
  if (!weights) return false;
  const Checkpoint checkpoint = Checkpoint::open(folder);
  for (const StoredTensor& tensor : family.stacked_experts) {
    if (tensor.scope == TensorScope::experts_stacked) {
      return checkpoint.find(tensor_name(tensor, 0, -1)) != nullptr;
    }
  }
  return false;
}
}  // namespace

LlamaConfig load_llama_config(const std::string& name_or_path) {
  std::filesystem::path path = name_or_path;
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    path /= "config.json";
    if (!std::filesystem::exists(path, error)) {
      throw InputError("checkpoint folder '" + name_or_path + "' has no config.json");
    }
  } else {
    path = resolve_data_file(name_or_path, "models", "model");
  }
  auto config = read_json_file(path, "model config");
  std::string name = path.stem().string();
  if (name == "config") name = path.parent_path().filename().string();
  LlamaConfig parsed = parse_llama_config(config, name, "model config '" + path.string() + "'");
  if (std::filesystem::is_directory(name_or_path, error)) {
    parsed.moe.stacked_experts = checkpoint_stacks_experts(name_or_path, parsed.model);
  }
  return parsed;
}

}  // namespace inferlab::engine
