#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>

namespace inferlab::engine::testing {

// A tiny Mixtral-shaped config.json: 2 layers, hidden 32, 4 heads of 8, 2 KV heads, vocab 96,
// 4 experts of 48 channels, top 2, untied embeddings.
inline nlohmann::json tiny_mixtral_config_json() {
  return {{"architectures", {"MixtralForCausalLM"}},
          {"model_type", "mixtral"},
          {"hidden_size", 32},
          {"intermediate_size", 48},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"vocab_size", 96},
          {"max_position_embeddings", 256},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", 10000.0},
          {"hidden_act", "silu"},
          {"num_local_experts", 4},
          {"num_experts_per_tok", 2},
          {"router_aux_loss_coef", 0.02},
          {"output_router_logits", false},
          {"sliding_window", nullptr},
          {"tie_word_embeddings", false},
          {"bos_token_id", 1},
          {"eos_token_id", 2},
          {"torch_dtype", "bfloat16"}};
}

// A Mixtral-shaped config.json as Qwen2-MoE writes the same model (no shared expert):
// num_experts, moe_intermediate_size (Mixtral's intermediate_size), norm_topk_prob, and
// intermediate_size the dense MLP's width `dense_intermediate` (unused: every layer is sparse).
inline nlohmann::json as_qwen_moe(nlohmann::json config, int64_t dense_intermediate,
                                  bool norm_topk_prob) {
  config["moe_intermediate_size"] = config["intermediate_size"];
  config["num_experts"] = config["num_local_experts"];
  config.erase("num_local_experts");
  config.erase("router_aux_loss_coef");
  config["architectures"] = {"Qwen2MoeForCausalLM"};
  config["model_type"] = "qwen2_moe";
  config["intermediate_size"] = dense_intermediate;
  config["norm_topk_prob"] = norm_topk_prob;
  config["shared_expert_intermediate_size"] = 0;
  config["decoder_sparse_step"] = 1;
  config["mlp_only_layers"] = nlohmann::json::array();
  config["use_sliding_window"] = false;
  return config;
}

// The tiny Mixtral as Qwen2-MoE writes it (q/k/v biases come with the model type).
inline nlohmann::json tiny_qwen_moe_config_json(bool norm_topk_prob) {
  return as_qwen_moe(tiny_mixtral_config_json(), 128, norm_topk_prob);
}

}  // namespace inferlab::engine::testing
