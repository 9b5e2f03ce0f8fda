#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/checkpoint.hpp"
#include "engine/llama_config.hpp"
#include "model/family_spec.hpp"

namespace inferlab::engine {

// One weight the forward passes use, as the family's spec (model/family_spec.hpp) places it in
// the checkpoint.
struct WeightSpec {
  std::string
      name;  // Hugging Face name, e.g. "model.layers.3.self_attn.q_proj.weight"; a part
             // of a fused tensor: the tensor's name, ':' and the role ("...qkv_proj.weight:k_proj")
  WeightRole role;
  int64_t layer = -1;          // -1 for the embedding, final norm and LM head
  std::vector<int64_t> shape;  // [out, in] for projections (nn.Linear layout), [n] for vectors
  int64_t expert = -1;         // a mixture-of-experts expert's gate/up/down: its index
  TensorPart part{};           // how it shards, quantizes, fuses and is drawn at random
  std::string stored_name;     // the checkpoint tensor that holds it (name unless fused)
  int64_t stored_row = 0;      // its first row there (a stacked tensor: of the flattened rows)
  int64_t stored_stack = 0;    // experts stacked in the stored tensor's first dimension (0: none)
  int64_t elements() const;
  int64_t columns() const { return shape.size() > 1 ? shape[1] : 1; }
};

// A tensor of the checkpoint: its name, its shape and the specs (indices) it holds, in row order.
struct CheckpointTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<size_t> specs;
};

// The weights of `config`'s family (family_spec(config.model)), in checkpoint order: embedding,
// per layer (input norm, q/k/v (+ biases when qkv_bias), o, post-attention norm, gate/up/down or
// the router and each expert's gate/up/down), final norm, and lm_head unless the embeddings are
// tied. The parts of a fused checkpoint tensor follow each other in row order.
std::vector<WeightSpec> llama_weight_specs(const LlamaConfig& config);
// The checkpoint tensors `specs` come from, in order.
std::vector<CheckpointTensor> checkpoint_tensors(const std::vector<WeightSpec>& specs);

// True when `spec` is stored GPTQ-quantized in `checkpoint` (its module's qweight is there and
// the config says GPTQ).
bool is_gptq_module(const Checkpoint& checkpoint, const WeightSpec& spec,
                    const LlamaConfig& config);

// Checks that the checkpoint holds exactly the tensors of llama_weight_specs with those shapes
// and a float dtype (BF16, F16, F32), or for GPTQ modules their qweight, qzeros, scales and g_idx.
// Tensors that transformers ignores are allowed: rotary_emb.inv_freq buffers and lm_head.weight
// beside tied embeddings. One InputError names every missing, unexpected, misshapen or mistyped
// tensor (the first few of each kind).
void check_llama_checkpoint(const Checkpoint& checkpoint, const LlamaConfig& config);

struct LayerWeights {
  std::vector<float> input_layernorm;           // [hidden]
  std::vector<float> q_proj, k_proj, v_proj;    // [q_dim, hidden], [kv_dim, hidden] x2
  std::vector<float> q_bias, k_bias, v_bias;    // empty unless qkv_bias
  std::vector<float> q_norm, k_norm;            // [head_dim]; empty unless the family's qk_norm
  std::vector<float> o_proj;                    // [hidden, q_dim]
  std::vector<float> post_attention_layernorm;  // [hidden]
  std::vector<float> gate_proj, up_proj;        // [intermediate, hidden]
  std::vector<float> down_proj;                 // [hidden, intermediate]
  // Mixture of experts (the dense MLP above is then empty): the router and the experts.
  std::vector<float> router;  // [num_experts, hidden]
  struct Expert {
    std::vector<float> gate_proj, up_proj;  // [intermediate, hidden]
    std::vector<float> down_proj;           // [hidden, intermediate]
  };
  std::vector<Expert> experts;
};

// All weights as fp32 (converted once at load), nn.Linear layout ([out, in], row-major).
struct LlamaWeights {
  std::vector<float> embed_tokens;  // [vocab, hidden]
  std::vector<LayerWeights> layers;
  std::vector<float> final_norm;  // [hidden]
  std::vector<float> lm_head;     // [vocab, hidden]; empty when tied to embed_tokens
  // Stores one tensor where its spec's role, layer and expert say.
  void set(const WeightSpec& spec, std::vector<float> values);
  // The tensor a spec names (empty when not set).
  const std::vector<float>& at(const WeightSpec& spec) const;
  std::vector<float>& at(const WeightSpec& spec);
  const std::vector<float>& output_embedding() const {
    return lm_head.empty() ? embed_tokens : lm_head;
  }
};

// Checks (check_llama_checkpoint) and converts (GPTQ modules dequantized).
LlamaWeights load_llama_weights(const Checkpoint& checkpoint, const LlamaConfig& config);

// Converts one tensor (BF16, F16 or F32) to fp32.
std::vector<float> tensor_to_float(const TensorView& view);
// Converts the elements [first, first + count) of one tensor to fp32.
std::vector<float> tensor_to_float(const TensorView& view, int64_t first, int64_t count);

// A checkpoint folder: config.json + safetensors, checked and loaded.
struct LlamaModel {
  LlamaConfig config;
  LlamaWeights weights;
};
LlamaModel load_llama_model(const std::filesystem::path& folder);

}  // namespace inferlab::engine
