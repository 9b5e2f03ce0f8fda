#include "engine/llama_weights.hpp"

#include <algorithm>
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

}  // namespace

int64_t WeightSpec::elements() const {
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  return count;
}

std::vector<WeightSpec> llama_weight_specs(const LlamaConfig& config) {
  const ModelConfig& m = config.model;
  std::vector<WeightSpec> specs;
  // The parts of the stored tensor `stored` from row `row` on (a fused tensor's parts follow one
  // another by rows), named `stored`, or `stored:role` for a fused tensor's parts, then
  // `suffix`; `stack`: experts stacked in the stored tensor (0: none).
  auto add_parts = [&](const StoredTensor& tensor, const std::string& stored, int64_t layer,
                       int64_t expert, int64_t row, int64_t stack, const std::string& suffix) {
    for (const TensorPart& part : tensor.parts) {
      WeightSpec spec;
      spec.name = tensor.parts.size() == 1 && suffix.empty()
                      ? stored
                      : stored + ":" + weight_role_name(part.role) + suffix;
      spec.role = part.role;
      spec.layer = layer;
      spec.expert = expert;
      spec.shape = {extent_size(part.rows, m)};
      if (part.columns != Extent::one) spec.shape.push_back(extent_size(part.columns, m));
      spec.part = part;
      spec.stored_name = stored;
      spec.stored_row = row;
      spec.stored_stack = stack;
      row += spec.shape[0];
      specs.push_back(std::move(spec));
    }
  };
  auto add = [&](const StoredTensor& tensor, int64_t layer, int64_t expert) {
    add_parts(tensor, tensor_name(tensor, layer, expert), layer, expert, 0, 0, "");
  };
  // Every expert of a layer in one tensor [E, rows, columns]: expert e's parts at flattened rows
  // e x rows + their offset, named `stored:role:e`.
  auto add_stacked = [&](const StoredTensor& tensor, int64_t layer) {
    const std::string stored = tensor_name(tensor, layer, -1);
    int64_t rows = 0;
    for (const TensorPart& part : tensor.parts) rows += extent_size(part.rows, m);
    for (int64_t expert = 0; expert < m.num_experts; ++expert) {
      add_parts(tensor, stored, layer, expert, expert * rows, m.num_experts,
                ":" + std::to_string(expert));
    }
  };
  const FamilySpec& family = family_spec(m);
  const bool stacked = m.is_moe() && config.moe.stacked_experts;
  if (stacked && family.stacked_experts.empty()) {
    throw InputError(m.name + ": the " + family.name +
                     " family has no stacked-experts layout for this checkpoint");
  }
  // Model-wide tensors before the layers come first, those after them last (the final norm and
  // the LM head); a layer's tensors, its experts' in expert order, in between.
  auto layers_begin =
      std::find_if(family.tensors.begin(), family.tensors.end(),
                   [](const StoredTensor& t) { return t.scope != TensorScope::model; });
  for (auto t = family.tensors.begin(); t != layers_begin; ++t) {
    if (tensor_present(*t, m)) add(*t, -1, -1);
  }
  for (int64_t layer = 0; layer < m.num_layers; ++layer) {
    for (auto t = layers_begin; t != family.tensors.end(); ++t) {
      if (t->scope == TensorScope::model || !tensor_present(*t, m)) continue;
      const bool router = t->parts.front().role == WeightRole::router;
      if (t->scope == TensorScope::layer && !(stacked && router)) add(*t, layer, -1);
    }
    if (stacked) {  // the router and the stacked experts in place of the Hub's
      for (const StoredTensor& t : family.stacked_experts) {
        if (t.scope == TensorScope::experts_stacked) {
          add_stacked(t, layer);
        } else {
          add(t, layer, -1);
        }
      }
      continue;
    }
    // Experts one by one, each with all its tensors (Hugging Face's order).
    for (int64_t expert = 0; expert < (m.is_moe() ? m.num_experts : 0); ++expert) {
      for (auto t = layers_begin; t != family.tensors.end(); ++t) {
        if (t->scope == TensorScope::expert) add(*t, layer, expert);
      }
    }
  }
  for (auto t = layers_begin; t != family.tensors.end(); ++t) {
    if (t->scope == TensorScope::model && tensor_present(*t, m)) add(*t, -1, -1);
  }
  return specs;
}

std::vector<CheckpointTensor> checkpoint_tensors(const std::vector<WeightSpec>& specs) {
  std::vector<CheckpointTensor> tensors;
  for (size_t i = 0; i < specs.size(); ++i) {
    const WeightSpec& spec = specs[i];
    if (tensors.empty() || tensors.back().name != spec.stored_name) {
      tensors.push_back({spec.stored_name, spec.shape, {}});
    } else {
      tensors.back().shape[0] += spec.shape[0];
    }
    tensors.back().specs.push_back(i);
  }
  // A stacked tensor's rows are [experts, rows an expert].
  for (CheckpointTensor& tensor : tensors) {
    const int64_t stack = specs[tensor.specs.front()].stored_stack;
    if (stack > 0) {
      tensor.shape = {stack, tensor.shape[0] / stack, tensor.shape[1]};
    }
  }
  return tensors;
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
    if (!is_gptq_module(checkpoint, spec, config)) continue;
    for (const auto& name : gptq_tensor_names(spec.name)) expected[name] = &spec;
    const auto problems =
        check_gptq_module(checkpoint, spec.name, spec.shape[0], spec.shape[1], *config.gptq);
    misshapen.insert(misshapen.end(), problems.begin(), problems.end());
  }
  for (const CheckpointTensor& tensor : checkpoint_tensors(specs)) {
    if (is_gptq_module(checkpoint, specs[tensor.specs.front()], config)) continue;
    expected[tensor.name] = &specs[tensor.specs.front()];
    const TensorView* view = checkpoint.find(tensor.name);
    if (view == nullptr) {
      missing.push_back(tensor.name);
      continue;
    }
    if (view->info->shape != tensor.shape) {
      misshapen.push_back(tensor.name + " is " + shape_text(view->info->shape) + ", expected " +
                          shape_text(tensor.shape));
    }
    if (!float_dtype(view->info->dtype)) {
      mistyped.push_back(tensor.name + " is " + std::string(tensor_dtype_name(view->info->dtype)));
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
  return tensor_to_float(view, 0, view.info->elements());
}

std::vector<float> tensor_to_float(const TensorView& view, int64_t first, int64_t count) {
  if (first < 0 || count < 0 || first + count > view.info->elements()) {
    throw std::invalid_argument("tensor_to_float: elements out of range of '" + view.info->name +
                                "'");
  }
  std::vector<float> out(static_cast<size_t>(count));
  switch (view.info->dtype) {
    case TensorDType::bf16:
    case TensorDType::f16: {
      const uint8_t* data = view.data + 2 * first;
      const bool bf16 = view.info->dtype == TensorDType::bf16;
      for (size_t i = 0; i < out.size(); ++i) {
        uint16_t bits;
        std::memcpy(&bits, data + 2 * i, 2);
        out[i] = bf16 ? bf16_to_float(bits) : fp16_to_float(bits);
      }
      break;
    }
    case TensorDType::f32:
      std::memcpy(out.data(), view.data + 4 * first, 4 * out.size());
      break;
    default:
      throw InputError("tensor '" + view.info->name + "' in '" + *view.file + "' is " +
                       std::string(tensor_dtype_name(view.info->dtype)) +
                       ", not a float type the engine can load");
  }
  return out;
}

std::vector<float>& LlamaWeights::at(const WeightSpec& spec) {
  LayerWeights* layer = spec.layer >= 0 ? &layers.at(static_cast<size_t>(spec.layer)) : nullptr;
  if (spec.expert >= 0) {
    if (layer->experts.size() <= static_cast<size_t>(spec.expert)) {
      layer->experts.resize(static_cast<size_t>(spec.expert) + 1);
    }
    LayerWeights::Expert& expert = layer->experts[static_cast<size_t>(spec.expert)];
    if (spec.role == WeightRole::gate_proj) return expert.gate_proj;
    if (spec.role == WeightRole::up_proj) return expert.up_proj;
    if (spec.role == WeightRole::down_proj) return expert.down_proj;
    throw std::invalid_argument("LlamaWeights: an expert has no " +
                                std::string(weight_role_name(spec.role)));
  }
  switch (spec.role) {
    case WeightRole::embed_tokens:
      return embed_tokens;
    case WeightRole::final_norm:
      return final_norm;
    case WeightRole::lm_head:
      return lm_head;
    case WeightRole::input_layernorm:
      return layer->input_layernorm;
    case WeightRole::q_proj:
      return layer->q_proj;
    case WeightRole::k_proj:
      return layer->k_proj;
    case WeightRole::v_proj:
      return layer->v_proj;
    case WeightRole::q_bias:
      return layer->q_bias;
    case WeightRole::k_bias:
      return layer->k_bias;
    case WeightRole::v_bias:
      return layer->v_bias;
    case WeightRole::q_norm:
      return layer->q_norm;
    case WeightRole::k_norm:
      return layer->k_norm;
    case WeightRole::o_proj:
      return layer->o_proj;
    case WeightRole::post_attention_layernorm:
      return layer->post_attention_layernorm;
    case WeightRole::gate_proj:
      return layer->gate_proj;
    case WeightRole::up_proj:
      return layer->up_proj;
    case WeightRole::down_proj:
      return layer->down_proj;
    case WeightRole::router:
      return layer->router;
  }
  throw std::invalid_argument("LlamaWeights: unknown role");
}

const std::vector<float>& LlamaWeights::at(const WeightSpec& spec) const {
  // The non-const lookup grows a layer's expert list only for an expert not there yet.
  if (spec.expert >= 0 && layers.at(static_cast<size_t>(spec.layer)).experts.size() <=
                              static_cast<size_t>(spec.expert)) {
    throw std::out_of_range("LlamaWeights: no expert " + std::to_string(spec.expert));
  }
  return const_cast<LlamaWeights*>(this)->at(spec);
}

void LlamaWeights::set(const WeightSpec& spec, std::vector<float> values) {
  at(spec) = std::move(values);
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
    const TensorView* stored = checkpoint.find(spec.stored_name);
    weights.set(spec, tensor_to_float(*stored, spec.stored_row * spec.columns(), spec.elements()));
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
