#include "model/model_family.hpp"

namespace inferlab {

namespace {

bool is_gpt(const ModelConfig& m) {
  return m.gpt_style;
}
bool is_sparse_moe(const ModelConfig& m) {
  return m.is_moe();
}
bool is_any(const ModelConfig&) {
  return true;
}

std::vector<ModelFamily> make_families() {
  return {
      {"gpt",
       "GPT-2/GPT-3 (GPT2LMHeadModel, model_type gpt2): LayerNorm, learned positions, GELU MLP, "
       "biases",
       is_gpt,
       NormKind::layer,
       {{"token_position_embedding", token_position_embedding_block},
        {"learned_position_attention", learned_position_attention_block},
        {"gelu_mlp", gelu_mlp_block},
        {"head", head_block}}},
      {"mixtral",
       "sparse mixture of experts (MixtralForCausalLM, or any config with num_local_experts): "
       "RMSNorm, RoPE, top-k SwiGLU experts",
       is_sparse_moe,
       NormKind::rms,
       {{"token_embedding", token_embedding_block},
        {"rotary_attention", rotary_attention_block},
        {"moe_mlp", moe_mlp_block},
        {"head", head_block}}},
      {"llama",
       "dense Llama-style decoders (Llama, Mistral, Qwen2 with its QKV bias, and any other "
       "model_type): RMSNorm, RoPE, SwiGLU MLP",
       is_any,
       NormKind::rms,
       {{"token_embedding", token_embedding_block},
        {"rotary_attention", rotary_attention_block},
        {"gated_mlp", gated_mlp_block},
        {"head", head_block}}},
  };
}

}  // namespace

const std::vector<ModelFamily>& model_families() {
  static const std::vector<ModelFamily> families = make_families();
  return families;
}

const ModelFamily& model_family(const ModelConfig& model) {
  for (const ModelFamily& family : model_families()) {
    if (family.matches(model)) return family;
  }
  return model_families().back();  // unreachable: the last family matches every config
}

}  // namespace inferlab
