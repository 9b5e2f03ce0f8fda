#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/gptq_config.hpp"
#include "model/model_config.hpp"

namespace inferlab::engine {

// Rotary embedding parameters. ModelConfig keeps only rope_scaling's type and factor; the
// Llama 3 frequency adjustment needs the other three fields, parsed here from config.json.
struct RopeParams {
  enum class Kind { plain, linear, llama3 };
  Kind kind = Kind::plain;
  double theta = 10000.0;
  double factor = 1.0;                             // linear and llama3
  double low_freq_factor = 1.0;                    // llama3
  double high_freq_factor = 4.0;                   // llama3
  double original_max_position_embeddings = 8192;  // llama3
};

// A mixture-of-experts MLP (every layer): model.num_experts SwiGLU experts of
// model.intermediate_size channels, model.experts_per_token of them chosen per token by a linear
// router (fp32 logits). The chosen experts are the top-k logits (ties: the lower index); their
// weights are softmax over all experts' logits restricted to the k, renormalised to sum to 1
// when renormalize_top_k. Mixtral: softmax of the top-k logits (the same thing, renormalised);
// Qwen2/3-MoE: softmax over all, top-k, renormalised only with norm_topk_prob. The tensors'
// names are the family spec's (model/family_spec.cpp).
struct MoeParams {
  bool renormalize_top_k = true;
  // The checkpoint stores the router and experts as transformers 5 saves them (FamilySpec::
  // stacked_experts: mlp.gate, mlp.experts.gate_up_proj [E, 2I, H], mlp.experts.down_proj
  // [E, H, I]) rather than an expert a tensor; load_llama_config sets it from the checkpoint.
  bool stacked_experts = false;
};

// What the engine needs of a Llama-family config.json (Llama 2/3.x, Mistral, Qwen2): the
// shared ModelConfig plus the fields it does not carry (rms_norm_eps, the full rope_scaling,
// sliding_window, token ids). The config.json object is kept as given, for init-weights.
struct LlamaConfig {
  ModelConfig model;
  double rms_norm_eps = 1e-6;  // transformers' LlamaConfig default
  RopeParams rope;
  int64_t sliding_window = 0;  // 0: full causal attention (Mistral v0.1: 4096)
  int64_t bos_token_id = -1;   // -1: none given
  std::vector<int64_t> eos_token_ids;
  std::optional<GptqConfig> gptq;  // the checkpoint's projections are GPTQ-quantized
  MoeParams moe;                   // read only when model.is_moe()
  nlohmann::json hf_config;
};

// Throws InputError naming `context` for a config the engine cannot run: GPT-2 style, MoE
// features beyond routed SwiGLU experts in every layer (shared experts, dense layers between
// sparse ones, GPTQ experts), an activation other than SiLU, MLP biases, rope_scaling types other
// than llama3/linear.
LlamaConfig parse_llama_config(const nlohmann::json& config, const std::string& name,
                               const std::string& context);
// A shipped model name (data/models/<name>.json), a config.json path, or a checkpoint folder
// (its config.json).
LlamaConfig load_llama_config(const std::string& name_or_path);

}  // namespace inferlab::engine
