#include "engine/quant/quantized_model.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "engine/bf16.hpp"
#include "engine/quant/gptq.hpp"
#include "util/error.hpp"

namespace inferlab::engine {

namespace {

// The SmoothQuant factors that apply to a projection's input columns (one set per fused group of
// a layer), or null.
const std::vector<float>* column_factors(const WeightSpec& spec,
                                         const SmoothingFactors* smoothing) {
  if (smoothing == nullptr || spec.layer < 0 || !spec.part.quantizable) return nullptr;
  const auto l = static_cast<size_t>(spec.layer);
  switch (spec.part.group) {
    case FusedGroup::qkv:
      return &smoothing->qkv.at(l);
    case FusedGroup::gate_up:
      return &smoothing->gate_up.at(l);
    case FusedGroup::none:
      break;
  }
  return nullptr;
}

// The factors a norm's weight is divided by, or null.
const std::vector<float>* norm_factors(WeightRole role, int64_t layer,
                                       const SmoothingFactors* smoothing) {
  if (smoothing == nullptr || layer < 0) return nullptr;
  if (role == WeightRole::input_layernorm) return &smoothing->qkv.at(static_cast<size_t>(layer));
  if (role == WeightRole::post_attention_layernorm) {
    return &smoothing->gate_up.at(static_cast<size_t>(layer));
  }
  return nullptr;
}

void require_smoothing(const QuantConfig& config, const SmoothingFactors* smoothing,
                       int64_t layers) {
  if (config.activations != DType::int8) return;
  if (smoothing == nullptr || static_cast<int64_t>(smoothing->qkv.size()) != layers ||
      static_cast<int64_t>(smoothing->gate_up.size()) != layers) {
    throw std::invalid_argument("W8A8 needs SmoothQuant factors for every layer");
  }
}

std::vector<float> dequantized(const std::vector<float>& w, int64_t out, int64_t in,
                               const QuantConfig& config) {
  return dequantize_matrix(
      quantize_matrix(w.data(), out, in, config.weights, config.group_for(in)));
}

}  // namespace

bool is_quantized_role(WeightRole role, const QuantConfig& config) {
  if (config.weights == DType::bf16) return false;
  switch (role) {
    case WeightRole::q_proj:
    case WeightRole::k_proj:
    case WeightRole::v_proj:
    case WeightRole::o_proj:
    case WeightRole::gate_proj:
    case WeightRole::up_proj:
    case WeightRole::down_proj:
      return true;
    case WeightRole::lm_head:
      return config.quantize_lm_head;
    default:
      return false;
  }
}

bool is_quantized(const WeightSpec& spec, const QuantConfig& config) {
  if (config.weights == DType::bf16 || !spec.part.quantizable) return false;
  return spec.role != WeightRole::lm_head || config.quantize_lm_head;
}

int64_t quantized_weight_bytes(const LlamaConfig& model, const QuantConfig& config) {
  const ModelConfig& m = model.model;
  auto matrix_bytes = [&](int64_t out, int64_t in) -> int64_t {
    switch (config.weights) {
      case DType::int4:
        return out * (in / 2 + 3 * (in / config.group_for(in)));
      case DType::int8:
      case DType::fp8:
        return out * (in + 4);
      default:
        return 2 * out * in;
    }
  };
  int64_t total = 0;
  for (const WeightSpec& spec : llama_weight_specs(model)) {
    total += is_quantized(spec, config) ? matrix_bytes(spec.shape[0], spec.shape[1])
                                        : 2 * spec.elements();
  }
  if (m.tie_word_embeddings && is_quantized_role(WeightRole::lm_head, config)) {
    total += matrix_bytes(m.vocab_size, m.hidden_size);
  }
  return total;
}

QuantizedMatrix quantize_bf16_matrix(const std::vector<uint16_t>& bits, int64_t out, int64_t in,
                                     const QuantConfig& config,
                                     const std::vector<float>* column_scale) {
  if (static_cast<int64_t>(bits.size()) != out * in) {
    throw std::invalid_argument("quantize_bf16_matrix: size does not match the shape");
  }
  std::vector<float> w(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) w[i] = bf16_to_float(bits[i]);
  if (column_scale != nullptr) scale_weight_columns(w.data(), out, in, *column_scale);
  return quantize_matrix(w.data(), out, in, config.weights, config.group_for(in));
}

void apply_quantization(LlamaWeights& weights, const LlamaConfig& model, const QuantConfig& config,
                        const SmoothingFactors* smoothing) {
  if (config.weights == DType::bf16) return;
  const ModelConfig& m = model.model;
  require_smoothing(config, smoothing, m.num_layers);
  const SmoothingFactors* factors = config.activations == DType::int8 ? smoothing : nullptr;
  // A GPTQ checkpoint's projections were loaded as the values they stand for already.
  for (const WeightSpec& spec : llama_weight_specs(model)) {
    if (model.gptq || spec.layer < 0) continue;
    std::vector<float>& values = weights.at(spec);
    if (is_quantized(spec, config)) {
      if (const auto* s = column_factors(spec, factors)) {
        scale_weight_columns(values.data(), spec.shape[0], spec.shape[1], *s);
      }
      values = dequantized(values, spec.shape[0], spec.shape[1], config);
    } else if (const auto* s = norm_factors(spec.role, spec.layer, factors)) {
      divide_norm_weight(values.data(), m.hidden_size, *s);
    }
  }
  if (config.quantize_lm_head) {
    weights.lm_head = dequantized(weights.output_embedding(), m.vocab_size, m.hidden_size, config);
  }
}

WeightLoader quantizing_loader(TensorSource source, const LlamaConfig& model, QuantConfig config,
                               std::shared_ptr<const SmoothingFactors> smoothing) {
  require_smoothing(config, smoothing.get(), model.model.num_layers);
  if (config.activations != DType::int8) smoothing.reset();
  return [source = std::move(source), config, smoothing](const WeightSpec& spec) {
    LoadedWeight loaded;
    std::vector<uint16_t> bits = source(spec);
    if (is_quantized(spec, config)) {
      loaded.quantized = quantize_bf16_matrix(bits, spec.shape.at(0), spec.shape.at(1), config,
                                              column_factors(spec, smoothing.get()));
      return loaded;
    }
    if (const auto* s = norm_factors(spec.role, spec.layer, smoothing.get())) {
      std::vector<float> norm(bits.size());
      for (size_t i = 0; i < bits.size(); ++i) norm[i] = bf16_to_float(bits[i]);
      divide_norm_weight(norm.data(), static_cast<int64_t>(norm.size()), *s);
      for (size_t i = 0; i < bits.size(); ++i) bits[i] = float_to_bf16(norm[i]);
    }
    loaded.bf16 = std::move(bits);
    return loaded;
  };
}

WeightLoader checkpoint_weight_loader(const Checkpoint& checkpoint, const LlamaConfig& model,
                                      QuantConfig config,
                                      std::shared_ptr<const SmoothingFactors> smoothing) {
  WeightLoader from_bf16 =
      quantizing_loader(checkpoint_tensor_source(checkpoint), model, config, std::move(smoothing));
  if (!model.gptq) return from_bf16;
  const DType stored = checkpoint_weight_format(model);
  if (config.activations == DType::int8) {
    throw InputError(
        "--activations int8 needs a bf16 checkpoint: SmoothQuant migrates the "
        "weights before quantizing them, and this one is GPTQ-quantized");
  }
  if (config.weights != stored && config.weights != DType::bf16) {
    throw InputError(
        fmt::format("this checkpoint holds GPTQ {} weights; run it with --weights {} "
                    "(or bf16 to dequantize them)",
                    dtype_name(stored), dtype_name(stored)));
  }
  return [&checkpoint, model, config, from_bf16](const WeightSpec& spec) {
    if (!is_gptq_module(checkpoint, spec, model)) return from_bf16(spec);
    LoadedWeight loaded;
    QuantizedMatrix matrix =
        read_gptq_module(checkpoint, spec.name, spec.shape[0], spec.shape[1], *model.gptq);
    if (config.weights == DType::bf16) {
      const std::vector<float> values = dequantize_matrix(matrix);
      loaded.bf16.resize(values.size());
      for (size_t i = 0; i < values.size(); ++i) loaded.bf16[i] = float_to_bf16(values[i]);
    } else {
      loaded.quantized = std::move(matrix);
    }
    return loaded;
  };
}

DType checkpoint_weight_format(const LlamaConfig& model) {
  if (!model.gptq) return DType::bf16;
  return model.gptq->bits == 4 ? DType::int4 : DType::int8;
}

}  // namespace inferlab::engine
