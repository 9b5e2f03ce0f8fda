#pragma once
// A model family as data: the tensors its checkpoint holds (Hugging Face names and shapes),
// how the engine groups them (fused QKV and gate/up), how tensor parallelism splits them, which
// ones quantize, how random weights are drawn, and the ops its layer runs beyond a Llama layer's.
// One table entry per family (family_spec.cpp). The engine's loader, checkpoint check, random
// initializer, quantizers, TP sharder and memory check read the tensors; the predictor's graph
// builder and both forward passes read the layer's ops. A new dense family whose layer is a
// Llama layer needs only its entry here.
#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.hpp"

namespace inferlab {

// What a weight is for; the forward passes index weights by it.
enum class WeightRole {
  embed_tokens,
  input_layernorm,
  q_proj,
  k_proj,
  v_proj,
  q_bias,
  k_bias,
  v_bias,
  q_norm,  // Qwen3: RMSNorm weight over each query head, [head_dim]
  k_norm,  // and over each key head
  o_proj,
  post_attention_layernorm,
  gate_proj,  // also a mixture-of-experts expert's, as up and down
  up_proj,
  down_proj,
  router,  // mixture of experts: [num_experts, hidden]
  final_norm,
  lm_head,
};
const char* weight_role_name(WeightRole role);

// A tensor's row or column count, as a config field.
enum class Extent { one, hidden, q_dim, kv_dim, head_dim, intermediate, experts, vocab };
int64_t extent_size(Extent extent, const ModelConfig& model);

// How tensor parallelism splits a weight (Megatron's rules).
enum class Shard {
  replicated,  // norms, the embedding, the router, per-head q/k norms
  rows,        // column-parallel: output rows split evenly (q/k/v and their biases, gate/up)
  columns,     // row-parallel: input columns split evenly (o, down); an all-reduce follows
  vocab_rows,  // the LM head: vocabulary rows, padded to equal shares
};

// How init-weights draws a weight: N(0, 1/sqrt(columns)) for projections, N(0, 1/sqrt(hidden))
// for the embedding and LM head, N(1, 0.1) for norm weights, N(0, 0.1) for biases.
enum class Init { projection, embedding, norm, bias };

// The fused GEMMs the engine runs a layer's projections as (SmoothQuant migrates one factor per
// group, into the norm in front of it).
enum class FusedGroup { none, qkv, gate_up };

// One weight the forward passes use.
struct TensorPart {
  WeightRole role;
  Extent rows;
  Extent columns;  // Extent::one: a vector of `rows`
  Shard shard;
  bool quantizable;  // a projection that weight quantization (int8/int4/fp8, W8A8) quantizes
  FusedGroup group;
  Init init;
};

// Which checkpoints hold a tensor.
enum class Presence { always, qkv_bias, untied_lm_head };

// Where a tensor lives: once per model, per layer, or per expert of each layer.
// expert: one tensor an expert ("{expert}" in its name, the Hub's checkpoints);
// experts_stacked: one tensor a layer holding every expert in its first dimension [E, rows,
// columns], each expert's parts stacked by rows as in a fused tensor (transformers 5 saves
// mlp.experts.gate_up_proj [E, 2I, H] and mlp.experts.down_proj [E, H, I]).
enum class TensorScope { model, layer, expert, experts_stacked };

// One tensor of the checkpoint under its Hugging Face name, with "{layer}" and "{expert}"
// standing for the indices. It holds one part, or several stacked by rows (Phi-3's qkv_proj holds
// q, k and v; its gate_up_proj gate then up).
struct StoredTensor {
  std::string name;
  TensorScope scope;
  Presence presence;
  std::vector<TensorPart> parts;
};

// What a layer runs beyond a Llama layer's (RMSNorm, attention with RoPE, SwiGLU MLP or routed
// SwiGLU experts). Both forward passes and the predictor read these.
struct LayerOps {
  bool qk_norm = false;  // Qwen3: RMSNorm over each query and key head before RoPE
};

struct FamilySpec {
  const char* name;
  const char* covers;                    // in words: the architectures it serves
  std::vector<std::string> model_types;  // config.json model_type values; empty: every other
  std::vector<StoredTensor> tensors;     // in checkpoint order: model-wide, per layer, final
  LayerOps ops;
  // A mixture of experts as transformers 5 saves it: the router and the experts stacked
  // (mlp.gate, mlp.experts.gate_up_proj, mlp.experts.down_proj). A checkpoint that holds them is
  // read with these in place of `tensors`' router and expert tensors (MoeParams::stacked_experts).
  std::vector<StoredTensor> stacked_experts;
};

// Every family, the default one (Llama) last.
const std::vector<FamilySpec>& family_specs();
// The family of `model` by its model_type; the Llama spec for a model_type no entry names.
const FamilySpec& family_spec(const ModelConfig& model);

// The family whose model_types name `model_type`, or null (family_spec's fallback applies).
const FamilySpec* named_family(const std::string& model_type);
// Whether a family's layers hold experts (a mixture of experts) rather than a dense MLP.
bool family_has_experts(const FamilySpec& spec);
// Whether a family stores q/k/v as one tensor (no place for q/k/v biases).
bool family_fuses_qkv(const FamilySpec& spec);

// Whether `tensor` is in `model`'s checkpoint.
bool tensor_present(const StoredTensor& tensor, const ModelConfig& model);
// A tensor's name with its layer and expert filled in.
std::string tensor_name(const StoredTensor& tensor, int64_t layer, int64_t expert);
// The parameter count the spec gives for `model` (every tensor, every layer and expert).
int64_t spec_parameter_count(const FamilySpec& spec, const ModelConfig& model);

}  // namespace inferlab
