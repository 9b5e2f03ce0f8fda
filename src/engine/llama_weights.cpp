#include "engine/llama_weights.hpp"

#include <cstring>
#include <map>
#include <stdexcept>

#include "engine/bf16.hpp"
#include "engine/quant/gptq.hpp"
#include "engine/quant/quantize.hpp"
#include "util/error.hpp"

namespace inferlab::engine {

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

bool ignorable(const std::string& name, const LlamaConfig& config) {
  const std::string suffix = "rotary_emb.inv_freq";
  if (name.size() >= suffix.size() &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return true;
  }
  return config.model.tie_word_embeddings && name == "lm_head.weight";
}

bool float_dtype(TensorDType dtype) {
  return dtype == TensorDType::bf16 || dtype == TensorDType::f16 || dtype == TensorDType::f32;
}

void append_list(std::string& message, const std::string& what,
                 const std::vector<std::string>& items) {
  if (items.empty()) return;
  constexpr size_t kShown = 8;
  message += "\n  " + what + " (" + std::to_string(items.size()) + "): ";
  for (size_t i = 0; i < items.size() && i < kShown; ++i) {
    if (i > 0) message += ", ";
    message += items[i];
  }
  if (items.size() > kShown) message += ", ...";
}

// A mixture-of-experts layer's router and experts, under `p` ("model.layers.N."), in HF order.
void append_expert_specs(const LlamaConfig& config, const std::string& p, int64_t layer,
                         std::vector<WeightSpec>& specs) {
  const ModelConfig& m = config.model;
  const int64_t hidden = m.hidden_size, inter = m.intermediate_size;
  const bool mixtral = config.moe.names == MoeParams::Names::mixtral;
  const std::string block = p + (mixtral ? "block_sparse_moe." : "mlp.");
  specs.push_back({block + "gate.weight", WeightRole::router, layer, {m.num_experts, hidden}});
  // Mixtral's w1 is the gate, w3 the up and w2 the down projection.
  const char* gate = mixtral ? "w1" : "gate_proj";
  const char* up = mixtral ? "w3" : "up_proj";
  const char* down = mixtral ? "w2" : "down_proj";
  for (int64_t e = 0; e < m.num_experts; ++e) {
    const std::string expert = block + "experts." + std::to_string(e) + ".";
    specs.push_back({expert + gate + ".weight", WeightRole::gate_proj, layer, {inter, hidden}, e});
    specs.push_back({expert + up + ".weight", WeightRole::up_proj, layer, {inter, hidden}, e});
    specs.push_back({expert + down + ".weight", WeightRole::down_proj, layer, {hidden, inter}, e});
  }
}

}  // namespace

int64_t WeightSpec::elements() const {
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  return count;
}

std::vector<WeightSpec> llama_weight_specs(const LlamaConfig& config) {
  const ModelConfig& m = config.model;
  const int64_t hidden = m.hidden_size, q_dim = m.q_dim(), kv_dim = m.kv_dim();
  const int64_t inter = m.intermediate_size;
  std::vector<WeightSpec> specs;
  specs.push_back(
      {"model.embed_tokens.weight", WeightRole::embed_tokens, -1, {m.vocab_size, hidden}});
  for (int64_t layer = 0; layer < m.num_layers; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    specs.push_back({p + "input_layernorm.weight", WeightRole::input_layernorm, layer, {hidden}});
    specs.push_back({p + "self_attn.q_proj.weight", WeightRole::q_proj, layer, {q_dim, hidden}});
    specs.push_back({p + "self_attn.k_proj.weight", WeightRole::k_proj, layer, {kv_dim, hidden}});
    specs.push_back({p + "self_attn.v_proj.weight", WeightRole::v_proj, layer, {kv_dim, hidden}});
    if (m.qkv_bias) {
      specs.push_back({p + "self_attn.q_proj.bias", WeightRole::q_bias, layer, {q_dim}});
      specs.push_back({p + "self_attn.k_proj.bias", WeightRole::k_bias, layer, {kv_dim}});
      specs.push_back({p + "self_attn.v_proj.bias", WeightRole::v_bias, layer, {kv_dim}});
    }
    specs.push_back({p + "self_attn.o_proj.weight", WeightRole::o_proj, layer, {hidden, q_dim}});
    specs.push_back({p + "post_attention_layernorm.weight",
                     WeightRole::post_attention_layernorm,
                     layer,
                     {hidden}});
    if (m.is_moe()) {
      append_expert_specs(config, p, layer, specs);
      continue;
    }
    specs.push_back({p + "mlp.gate_proj.weight", WeightRole::gate_proj, layer, {inter, hidden}});
    specs.push_back({p + "mlp.up_proj.weight", WeightRole::up_proj, layer, {inter, hidden}});
    specs.push_back({p + "mlp.down_proj.weight", WeightRole::down_proj, layer, {hidden, inter}});
  }
  specs.push_back({"model.norm.weight", WeightRole::final_norm, -1, {hidden}});
  if (!m.tie_word_embeddings) {
    specs.push_back({"lm_head.weight", WeightRole::lm_head, -1, {m.vocab_size, hidden}});
  }
  return specs;
}

bool is_gptq_module(const Checkpoint& checkpoint, const WeightSpec& spec,
                    const LlamaConfig& config) {
  return config.gptq && spec.shape.size() == 2 &&
         checkpoint.find(gptq_tensor_names(spec.name)[0]) != nullptr;
}

void check_llama_checkpoint(const Checkpoint& checkpoint, const LlamaConfig& config) {
  std::vector<std::string> missing, unexpected, misshapen, mistyped;
  std::map<std::string, const WeightSpec*> expected;
  auto specs = llama_weight_specs(config);
  for (const auto& spec : specs) {
    if (!is_gptq_module(checkpoint, spec, config)) {
      expected[spec.name] = &spec;
      continue;
    }
    for (const auto& name : gptq_tensor_names(spec.name)) expected[name] = &spec;
    const auto problems =
        check_gptq_module(checkpoint, spec.name, spec.shape[0], spec.shape[1], *config.gptq);
    misshapen.insert(misshapen.end(), problems.begin(), problems.end());
  }
  for (const auto& spec : specs) {
    if (is_gptq_module(checkpoint, spec, config)) continue;
    const TensorView* view = checkpoint.find(spec.name);
    if (view == nullptr) {
      missing.push_back(spec.name);
      continue;
    }
    if (view->info->shape != spec.shape) {
      misshapen.push_back(spec.name + " is " + shape_text(view->info->shape) + ", expected " +
                          shape_text(spec.shape));
    }
    if (!float_dtype(view->info->dtype)) {
      mistyped.push_back(spec.name + " is " + std::string(tensor_dtype_name(view->info->dtype)));
    }
  }
  for (const auto& [name, view] : checkpoint.tensors()) {
    if (!expected.contains(name) && !ignorable(name, config)) unexpected.push_back(name);
  }
  if (missing.empty() && unexpected.empty() && misshapen.empty() && mistyped.empty()) return;
  std::string message = "checkpoint '" + checkpoint.folder().string() +
                        "' does not match its config (" + config.model.name + ", " +
                        std::to_string(config.model.num_layers) + " layers, hidden " +
                        std::to_string(config.model.hidden_size) + "):";
  append_list(message, "missing tensors", missing);
  append_list(message, "tensors of the wrong shape", misshapen);
  append_list(message, "tensors of an unsupported dtype (need BF16, F16 or F32)", mistyped);
  append_list(message, "unexpected tensors", unexpected);
  throw InputError(message);
}

std::vector<float> tensor_to_float(const TensorView& view) {
  const size_t count = static_cast<size_t>(view.info->elements());
  std::vector<float> out(count);
  const uint8_t* data = view.data;
  switch (view.info->dtype) {
    case TensorDType::bf16:
      for (size_t i = 0; i < count; ++i) {
        uint16_t bits;
        std::memcpy(&bits, data + 2 * i, 2);
        out[i] = bf16_to_float(bits);
      }
      break;
    case TensorDType::f16:
      for (size_t i = 0; i < count; ++i) {
        uint16_t bits;
        std::memcpy(&bits, data + 2 * i, 2);
        out[i] = fp16_to_float(bits);
      }
      break;
    case TensorDType::f32:
      std::memcpy(out.data(), data, 4 * count);
      break;
    default:
      throw InputError("tensor '" + view.info->name + "' in '" + *view.file + "' is " +
                       std::string(tensor_dtype_name(view.info->dtype)) +
                       ", not a float type the engine can load");
  }
  return out;
}

void LlamaWeights::set(const WeightSpec& spec, std::vector<float> values) {
  LayerWeights* layer = spec.layer >= 0 ? &layers.at(static_cast<size_t>(spec.layer)) : nullptr;
  if (spec.expert >= 0) {
    if (layer->experts.size() <= static_cast<size_t>(spec.expert)) {
      layer->experts.resize(static_cast<size_t>(spec.expert) + 1);
    }
    LayerWeights::Expert& expert = layer->experts[static_cast<size_t>(spec.expert)];
    if (spec.role == WeightRole::gate_proj) expert.gate_proj = std::move(values);
    if (spec.role == WeightRole::up_proj) expert.up_proj = std::move(values);
    if (spec.role == WeightRole::down_proj) expert.down_proj = std::move(values);
    return;
  }
  switch (spec.role) {
    case WeightRole::embed_tokens:
      embed_tokens = std::move(values);
      break;
    case WeightRole::final_norm:
      final_norm = std::move(values);
      break;
    case WeightRole::lm_head:
      lm_head = std::move(values);
      break;
    case WeightRole::input_layernorm:
      layer->input_layernorm = std::move(values);
      break;
    case WeightRole::q_proj:
      layer->q_proj = std::move(values);
      break;
    case WeightRole::k_proj:
      layer->k_proj = std::move(values);
      break;
    case WeightRole::v_proj:
      layer->v_proj = std::move(values);
      break;
    case WeightRole::q_bias:
      layer->q_bias = std::move(values);
      break;
    case WeightRole::k_bias:
      layer->k_bias = std::move(values);
      break;
    case WeightRole::v_bias:
      layer->v_bias = std::move(values);
      break;
    case WeightRole::o_proj:
      layer->o_proj = std::move(values);
      break;
    case WeightRole::post_attention_layernorm:
      layer->post_attention_layernorm = std::move(values);
      break;
    case WeightRole::gate_proj:
      layer->gate_proj = std::move(values);
      break;
    case WeightRole::up_proj:
      layer->up_proj = std::move(values);
      break;
    case WeightRole::down_proj:
      layer->down_proj = std::move(values);
      break;
    case WeightRole::router:
      layer->router = std::move(values);
      break;
  }
}

LlamaWeights load_llama_weights(const Checkpoint& checkpoint, const LlamaConfig& config) {
  check_llama_checkpoint(checkpoint, config);
  LlamaWeights weights;
  weights.layers.resize(static_cast<size_t>(config.model.num_layers));
  for (const auto& spec : llama_weight_specs(config)) {
    if (is_gptq_module(checkpoint, spec, config)) {
      weights.set(spec, dequantize_matrix(read_gptq_module(checkpoint, spec.name, spec.shape[0],
                                                           spec.shape[1], *config.gptq)));
      continue;
    }
    std::vector<float> values = tensor_to_float(*checkpoint.find(spec.name));
    weights.set(spec, std::move(values));
  }
  return weights;
}

LlamaModel load_llama_model(const std::filesystem::path& folder) {
  LlamaModel model;
  model.config = load_llama_config(folder.string());
  auto checkpoint = Checkpoint::open(folder);
  model.weights = load_llama_weights(checkpoint, model.config);
  return model;
}

}  // namespace inferlab::engine
