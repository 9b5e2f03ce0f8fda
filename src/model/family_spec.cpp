#include "model/family_spec.hpp"

#include <algorithm>
#include <stdexcept>

namespace inferlab {

namespace {

// The parts, by kind. Projections are stored [out, in] (nn.Linear's layout).
TensorPart projection(WeightRole role, Extent out, Extent in, Shard shard, FusedGroup group) {
  return {role, out, in, shard, true, group, Init::projection};
}
TensorPart norm_weight(WeightRole role, Extent size) {
  return {role, size, Extent::one, Shard::replicated, false, FusedGroup::none, Init::norm};
}
TensorPart bias(WeightRole role, Extent size) {
  return {role, size, Extent::one, Shard::rows, false, FusedGroup::qkv, Init::bias};
}

const TensorPart kQ =
    projection(WeightRole::q_proj, Extent::q_dim, Extent::hidden, Shard::rows, FusedGroup::qkv);
const TensorPart kK =
    projection(WeightRole::k_proj, Extent::kv_dim, Extent::hidden, Shard::rows, FusedGroup::qkv);
const TensorPart kV =
    projection(WeightRole::v_proj, Extent::kv_dim, Extent::hidden, Shard::rows, FusedGroup::qkv);
const TensorPart kO =
    projection(WeightRole::o_proj, Extent::hidden, Extent::q_dim, Shard::columns, FusedGroup::none);
const TensorPart kGate = projection(WeightRole::gate_proj, Extent::intermediate, Extent::hidden,
                                    Shard::rows, FusedGroup::gate_up);
const TensorPart kUp = projection(WeightRole::up_proj, Extent::intermediate, Extent::hidden,
                                  Shard::rows, FusedGroup::gate_up);
const TensorPart kDown = projection(WeightRole::down_proj, Extent::hidden, Extent::intermediate,
                                    Shard::columns, FusedGroup::none);
// The router stays whole on every rank and in bf16: a token's choice must not depend on either.
const TensorPart kRouter = {WeightRole::router, Extent::experts, Extent::hidden,
                            Shard::replicated,  false,           FusedGroup::none,
                            Init::projection};

StoredTensor layer_tensor(std::string name, std::vector<TensorPart> parts,
                          Presence presence = Presence::always) {
  return {"model.layers.{layer}." + std::move(name), TensorScope::layer, presence,
          std::move(parts)};
}

StoredTensor expert_tensor(const std::string& block, const std::string& name, TensorPart part) {
  return {"model.layers.{layer}." + block + "experts.{expert}." + name + ".weight",
          TensorScope::expert,
          Presence::always,
          {part}};
}

// The attention half of a layer: input norm, q/k/v (with biases where the config has them), o.
// `qk_norm` adds Qwen3's per-head norms; `fused_qkv` stores q, k and v as one tensor (Phi-3).
std::vector<StoredTensor> attention_tensors(bool qk_norm = false, bool fused_qkv = false) {
  std::vector<StoredTensor> tensors;
  tensors.push_back(layer_tensor("input_layernorm.weight",
                                 {norm_weight(WeightRole::input_layernorm, Extent::hidden)}));
  if (fused_qkv) {
    tensors.push_back(layer_tensor("self_attn.qkv_proj.weight", {kQ, kK, kV}));
  } else {
    tensors.push_back(layer_tensor("self_attn.q_proj.weight", {kQ}));
    tensors.push_back(layer_tensor("self_attn.k_proj.weight", {kK}));
    tensors.push_back(layer_tensor("self_attn.v_proj.weight", {kV}));
    tensors.push_back(layer_tensor("self_attn.q_proj.bias",
                                   {bias(WeightRole::q_bias, Extent::q_dim)}, Presence::qkv_bias));
    tensors.push_back(layer_tensor("self_attn.k_proj.bias",
                                   {bias(WeightRole::k_bias, Extent::kv_dim)}, Presence::qkv_bias));
    tensors.push_back(layer_tensor("self_attn.v_proj.bias",
                                   {bias(WeightRole::v_bias, Extent::kv_dim)}, Presence::qkv_bias));
  }
  tensors.push_back(layer_tensor("self_attn.o_proj.weight", {kO}));
  if (qk_norm) {
    tensors.push_back(layer_tensor("self_attn.q_norm.weight",
                                   {norm_weight(WeightRole::q_norm, Extent::head_dim)}));
    tensors.push_back(layer_tensor("self_attn.k_norm.weight",
                                   {norm_weight(WeightRole::k_norm, Extent::head_dim)}));
  }
  tensors.push_back(
      layer_tensor("post_attention_layernorm.weight",
                   {norm_weight(WeightRole::post_attention_layernorm, Extent::hidden)}));
  return tensors;
}

std::vector<StoredTensor> dense_mlp_tensors(bool fused_gate_up = false) {
  if (fused_gate_up) {
    return {layer_tensor("mlp.gate_up_proj.weight", {kGate, kUp}),
            layer_tensor("mlp.down_proj.weight", {kDown})};
  }
  return {layer_tensor("mlp.gate_proj.weight", {kGate}), layer_tensor("mlp.up_proj.weight", {kUp}),
          layer_tensor("mlp.down_proj.weight", {kDown})};
}

// A layer's router and experts under `block`, the experts' gate, up and down named as given:
// Mixtral's block_sparse_moe.{gate, experts.E.w1, w3, w2}; Qwen2-MoE's and Qwen3-MoE's
// mlp.{gate, experts.E.gate_proj, up_proj, down_proj}.
std::vector<StoredTensor> expert_tensors(const std::string& block, const char* gate, const char* up,
                                         const char* down) {
  return {layer_tensor(block + "gate.weight", {kRouter}), expert_tensor(block, gate, kGate),
          expert_tensor(block, up, kUp), expert_tensor(block, down, kDown)};
}

// transformers 5's layout of every MoE family here: the router as mlp.gate, the experts stacked.
std::vector<StoredTensor> stacked_expert_tensors() {
  auto stacked = [](const std::string& name, std::vector<TensorPart> parts) {
    return StoredTensor{"model.layers.{layer}.mlp.experts." + name, TensorScope::experts_stacked,
                        Presence::always, std::move(parts)};
  };
  return {layer_tensor("mlp.gate.weight", {kRouter}), stacked("gate_up_proj", {kGate, kUp}),
          stacked("down_proj", {kDown})};
}

std::vector<StoredTensor> mixtral_expert_tensors() {
  return expert_tensors("block_sparse_moe.", "w1", "w3", "w2");
}

std::vector<StoredTensor> qwen_expert_tensors() {
  return expert_tensors("mlp.", "gate_proj", "up_proj", "down_proj");
}

// Embedding, the given layer tensors, final norm, LM head (absent when tied).
std::vector<StoredTensor> model_tensors(std::vector<StoredTensor> attention,
                                        std::vector<StoredTensor> mlp) {
  std::vector<StoredTensor> tensors;
  tensors.push_back({"model.embed_tokens.weight",
                     TensorScope::model,
                     Presence::always,
                     {{WeightRole::embed_tokens, Extent::vocab, Extent::hidden, Shard::replicated,
                       false, FusedGroup::none, Init::embedding}}});
  for (auto* group : {&attention, &mlp}) {
    tensors.insert(tensors.end(), group->begin(), group->end());
  }
  tensors.push_back({"model.norm.weight",
                     TensorScope::model,
                     Presence::always,
                     {norm_weight(WeightRole::final_norm, Extent::hidden)}});
  tensors.push_back({"lm_head.weight",
                     TensorScope::model,
                     Presence::untied_lm_head,
                     {{WeightRole::lm_head, Extent::vocab, Extent::hidden, Shard::vocab_rows, true,
                       FusedGroup::none, Init::embedding}}});
  return tensors;
}

std::vector<FamilySpec> make_specs() {
  return {
      {"mistral",
       "Mistral (MistralForCausalLM): a Llama layer; sliding-window attention where the config "
       "sets sliding_window",
       {"mistral"},
       model_tensors(attention_tensors(), dense_mlp_tensors()),
       {},
       {}},
      {"qwen2",
       "Qwen2 and Qwen2.5 (Qwen2ForCausalLM): a Llama layer with q/k/v biases, tied embeddings "
       "in the small models",
       {"qwen2"},
       model_tensors(attention_tensors(), dense_mlp_tensors()),
       {},
       {}},
      {"qwen3",
       "Qwen3 (Qwen3ForCausalLM): a Llama layer with an RMSNorm over each query and key head "
       "before RoPE",
       {"qwen3"},
       model_tensors(attention_tensors(/*qk_norm=*/true), dense_mlp_tensors()),
       {.qk_norm = true},
       {}},
      {"phi3",
       "Phi-3 (Phi3ForCausalLM): a Llama layer whose checkpoint stores q/k/v as one qkv_proj and "
       "gate/up as one gate_up_proj",
       {"phi3"},
       model_tensors(attention_tensors(false, /*fused_qkv=*/true),
                     dense_mlp_tensors(/*fused_gate_up=*/true)),
       {},
       {}},
      {"qwen2_moe",
       "Qwen2-MoE without shared experts (Qwen2MoeForCausalLM): q/k/v biases, routed SwiGLU "
       "experts under mlp.experts",
       {"qwen2_moe"},
       model_tensors(attention_tensors(), qwen_expert_tensors()),
       {},
       stacked_expert_tensors()},
      {"qwen3_moe",
       "Qwen3-MoE (Qwen3MoeForCausalLM): Qwen3's attention with per-head q/k norms, routed SwiGLU "
       "experts under mlp.experts",
       {"qwen3_moe"},
       model_tensors(attention_tensors(/*qk_norm=*/true), qwen_expert_tensors()),
       {.qk_norm = true},
       stacked_expert_tensors()},
      {"mixtral",
       "Mixtral (MixtralForCausalLM) and any other mixture-of-experts config: routed SwiGLU "
       "experts under block_sparse_moe",
       {"mixtral"},
       model_tensors(attention_tensors(), mixtral_expert_tensors()),
       {},
       stacked_expert_tensors()},
      {"llama",
       "Llama 2, 3 and 3.x (LlamaForCausalLM) and any other dense model_type: RMSNorm, RoPE "
       "attention (q/k/v biases where attention_bias says), SwiGLU MLP",
       {},
       model_tensors(attention_tensors(), dense_mlp_tensors()),
       {},
       {}},
  };
}

const FamilySpec& named_spec(const char* name) {
  for (const FamilySpec& spec : family_specs()) {
    if (std::string(spec.name) == name) return spec;
  }
  throw std::logic_error(std::string("family_spec: no family '") + name + "'");
}

}  // namespace

const char* weight_role_name(WeightRole role) {
  switch (role) {
    case WeightRole::embed_tokens:
      return "embed_tokens";
    case WeightRole::input_layernorm:
      return "input_layernorm";
    case WeightRole::q_proj:
      return "q_proj";
    case WeightRole::k_proj:
      return "k_proj";
    case WeightRole::v_proj:
      return "v_proj";
    case WeightRole::q_bias:
      return "q_bias";
    case WeightRole::k_bias:
      return "k_bias";
    case WeightRole::v_bias:
      return "v_bias";
    case WeightRole::q_norm:
      return "q_norm";
    case WeightRole::k_norm:
      return "k_norm";
    case WeightRole::o_proj:
      return "o_proj";
    case WeightRole::post_attention_layernorm:
      return "post_attention_layernorm";
    case WeightRole::gate_proj:
      return "gate_proj";
    case WeightRole::up_proj:
      return "up_proj";
    case WeightRole::down_proj:
      return "down_proj";
    case WeightRole::router:
      return "router";
    case WeightRole::final_norm:
      return "final_norm";
    case WeightRole::lm_head:
      return "lm_head";
  }
  return "?";
}

int64_t extent_size(Extent extent, const ModelConfig& m) {
  switch (extent) {
    case Extent::one:
      return 1;
    case Extent::hidden:
      return m.hidden_size;
    case Extent::q_dim:
      return m.q_dim();
    case Extent::kv_dim:
      return m.kv_dim();
    case Extent::head_dim:
      return m.head_dim;
    case Extent::intermediate:
      return m.intermediate_size;
    case Extent::experts:
      return m.num_experts;
    case Extent::vocab:
      return m.vocab_size;
  }
  return 0;
}

bool family_has_experts(const FamilySpec& spec) {
  return std::any_of(spec.tensors.begin(), spec.tensors.end(),
                     [](const StoredTensor& t) { return t.scope == TensorScope::expert; });
}

bool family_fuses_qkv(const FamilySpec& spec) {
  return std::any_of(spec.tensors.begin(), spec.tensors.end(), [](const StoredTensor& t) {
    return t.parts.size() > 1 && t.parts.front().role == WeightRole::q_proj;
  });
}

const FamilySpec* named_family(const std::string& model_type) {
  for (const FamilySpec& spec : family_specs()) {
    if (std::find(spec.model_types.begin(), spec.model_types.end(), model_type) !=
        spec.model_types.end()) {
      return &spec;
    }
  }
  return nullptr;
}

const std::vector<FamilySpec>& family_specs() {
  static const std::vector<FamilySpec> specs = make_specs();
  return specs;
}

const FamilySpec& family_spec(const ModelConfig& model) {
  for (const FamilySpec& spec : family_specs()) {
    const bool named = std::find(spec.model_types.begin(), spec.model_types.end(),
                                 model.model_type) != spec.model_types.end();
    // A family's tensors are either a dense MLP or experts: a config of the other kind under
    // the family's model_type falls through to the default of its kind.
    if (named && family_has_experts(spec) == model.is_moe()) return spec;
  }
  return named_spec(model.is_moe() ? "mixtral" : "llama");
}

bool tensor_present(const StoredTensor& tensor, const ModelConfig& model) {
  switch (tensor.presence) {
    case Presence::always:
      return true;
    case Presence::qkv_bias:
      return model.qkv_bias;
    case Presence::untied_lm_head:
      return !model.tie_word_embeddings;
  }
  return true;
}

std::string tensor_name(const StoredTensor& tensor, int64_t layer, int64_t expert) {
  std::string name = tensor.name;
  auto fill = [&name](const std::string& field, int64_t value) {
    const size_t at = name.find(field);
    if (at != std::string::npos) name.replace(at, field.size(), std::to_string(value));
  };
  fill("{layer}", layer);
  fill("{expert}", expert);
  return name;
}

int64_t spec_parameter_count(const FamilySpec& spec, const ModelConfig& model) {
  int64_t total = 0;
  for (const StoredTensor& tensor : spec.tensors) {
    if (!tensor_present(tensor, model)) continue;
    int64_t elements = 0;
    for (const TensorPart& part : tensor.parts) {
      elements += extent_size(part.rows, model) * extent_size(part.columns, model);
    }
    const int64_t copies = tensor.scope == TensorScope::model ? 1
                           : tensor.scope == TensorScope::layer
                               ? model.num_layers
                               : model.num_layers * model.num_experts;
    total += elements * copies;
  }
  return total;
}

}  // namespace inferlab
