#include "engine/quant/quantize_checkpoint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <future>
#include <thread>

#include "engine/bf16.hpp"
#include "engine/checkpoint.hpp"
#include "engine/checkpoint_files.hpp"
#include "engine/quant/formats.hpp"
#include "engine/quant/gptq.hpp"
#include "engine/quant/moe_quantization.hpp"
#include "engine/quant/quantized_model.hpp"
#include "engine/safetensors_writer.hpp"
#include "util/error.hpp"

namespace inferlab::engine {

namespace {

// GPTQ modules are a layer's projections (the LM head and embeddings stay bf16).
bool is_layer_projection(const WeightSpec& spec) {
  return spec.layer >= 0 && spec.part.quantizable;
}

// What one spec becomes in the file: its GPTQ tensors (solved by GPTQ when there are
// Hessians, else rounded to nearest), or itself in bf16.
std::vector<TensorData> tensors_of(const WeightSpec& spec, const TensorSource& source,
                                   const QuantConfig& quant,
                                   const QuantizeCheckpointOptions& options) {
  std::vector<uint16_t> bits = source(spec);
  if (is_layer_projection(spec)) {
    const int64_t out = spec.shape.at(0), in = spec.shape.at(1);
    if (options.hessians == nullptr) {
      return gptq_module_tensors(spec.name, quantize_bf16_matrix(bits, out, in, quant));
    }
    std::vector<float> w(bits.size());
    for (size_t i = 0; i < bits.size(); ++i) w[i] = bf16_to_float(bits[i]);
    GptqOptions gptq;
    gptq.format = quant.weights;
    gptq.group_size = quant.weights == DType::int4 ? quant.group_size : 0;
    gptq.damp = options.damp;
    return gptq_module_tensors(
        spec.name,
        gptq_quantize(std::move(w), out, in, options.hessians->of(spec.role, spec.layer), gptq));
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(bits.data());
  return {{{spec.name, TensorDType::bf16, spec.shape},
           std::vector<uint8_t>(bytes, bytes + bits.size() * 2)}};
}

// The file's tensor list, known before any weight is read (the header comes first).
std::vector<TensorSpec> file_specs(const std::vector<WeightSpec>& specs, const QuantConfig& quant) {
  std::vector<TensorSpec> out;
  for (const auto& spec : specs) {
    if (!is_layer_projection(spec)) {
      out.push_back({spec.name, TensorDType::bf16, spec.shape});
      continue;
    }
    // The shapes of an all-zero matrix's tensors are those of any matrix of its size.
    QuantizedMatrix shape_only;
    shape_only.format = quant.weights;
    shape_only.out = spec.shape[0];
    shape_only.in = spec.shape[1];
    shape_only.group_size = quant.weights == DType::int4 ? quant.group_size : 0;
    const int pack = quant.weights == DType::int4 ? 8 : 4;
    const int64_t groups = shape_only.groups();
    const auto names = gptq_tensor_names(spec.name);
    out.push_back({names[0], TensorDType::i32, {shape_only.in / pack, shape_only.out}});
    out.push_back({names[1], TensorDType::i32, {groups, shape_only.out / pack}});
    out.push_back({names[2], TensorDType::f16, {groups, shape_only.out}});
    out.push_back({names[3], TensorDType::i32, {shape_only.in}});
  }
  return out;
}

}  // namespace

QuantizeCheckpointResult quantize_checkpoint(const LlamaConfig& config, const TensorSource& source,
                                             const QuantizeCheckpointOptions& options) {
  if (options.weights != DType::int4 && options.weights != DType::int8) {
    throw InputError(fmt::format("quantize --weights {}: GPTQ checkpoints hold int4 or int8",
                                 dtype_name(options.weights)));
  }
  const ModelConfig& m = config.model;
  QuantConfig quant;
  quant.weights = options.weights;
  quant.group_size = options.group_size;
  check_moe_quantization(config, quant);
  check_quant_config(quant, m.hidden_size, m.intermediate_size, m.q_dim());
  const int pack = options.weights == DType::int4 ? 8 : 4;
  for (int64_t width : {m.q_dim(), m.kv_dim(), m.hidden_size, m.intermediate_size}) {
    if (width % pack != 0) {
      throw InputError(
          fmt::format("{}: a width of {} cannot be GPTQ-packed {} to a word", m.name, width, pack));
    }
  }
  if (options.hessians != nullptr &&
      static_cast<int64_t>(options.hessians->layers.size()) != m.num_layers) {
    throw std::invalid_argument("quantize_checkpoint: Hessians of another model");
  }
  prepare_checkpoint_folder(options.out_dir, "quantize");

  QuantizeCheckpointResult result;
  nlohmann::json hf = config.hf_config;
  QuantizedMatrix any;
  any.format = options.weights;
  any.group_size = options.weights == DType::int4 ? options.group_size : 0;
  hf["quantization_config"] = gptq_quantization_config(any);
  const auto config_path = options.out_dir / "config.json";
  write_json_file(config_path, hf);
  result.files.push_back(config_path);

  const auto specs = llama_weight_specs(config);
  for (const WeightSpec& spec : specs) {
    if (spec.name != spec.stored_name) {
      throw InputError(fmt::format(
          "quantize: {} stores {} fused with other projections; GPTQ checkpoints of fused "
          "tensors are not supported (run it with --weights int8/int4, quantized at load)",
          m.name, spec.stored_name));
    }
  }
  const auto tensors = file_specs(specs, quant);
  const auto weights_path = options.out_dir / kSafetensorsFile;
  SafetensorsWriter writer(weights_path, tensors, {{"format", "pt"}});
  // Tensors are read and quantized on several threads, a few ahead of the writer, and written
  // in order.
  const size_t ahead = std::max(2u, std::min(16u, std::thread::hardware_concurrency()));
  std::deque<std::future<std::vector<TensorData>>> pending;
  size_t next = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    while (next < specs.size() && pending.size() < ahead) {
      const WeightSpec* spec = &specs[next++];
      pending.push_back(std::async(std::launch::async, [&source, spec, &quant, &options] {
        return tensors_of(*spec, source, quant, options);
      }));
    }
    for (const TensorData& tensor : pending.front().get()) {
      writer.write(tensor.bytes);
      result.weight_bytes += tensor.bytes.size();
      ++result.tensors;
    }
    pending.pop_front();
    if (is_layer_projection(specs[i])) ++result.quantized_modules;
  }
  writer.finish();
  result.files.push_back(weights_path);
  result.files.push_back(write_generation_config(options.out_dir, config));
  for (const auto& extra : options.extra_files) {
    copy_into(extra, options.out_dir / extra.filename(), "file");
    result.files.push_back(options.out_dir / extra.filename());
  }
  return result;
}

}  // namespace inferlab::engine
