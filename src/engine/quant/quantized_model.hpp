#pragma once
// A model under a QuantConfig: which tensors are quantized, what the CPU reference computes
// with, and what the GPU loader receives for each tensor.
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "engine/llama_config.hpp"
#include "engine/llama_weights.hpp"
#include "engine/quant/formats.hpp"
#include "engine/quant/quantize.hpp"
#include "engine/quant/smoothquant.hpp"
#include "engine/tensor_source.hpp"

namespace inferlab::engine {

// The projections a QuantConfig with quantized weights quantizes: q/k/v, o, gate/up, down, and
// the LM head unless quantize_lm_head is false (embeddings, norms and biases stay bf16).
bool is_quantized_role(WeightRole role, const QuantConfig& config);
// The same for one weight, as its family spec marks it (TensorPart::quantizable).
bool is_quantized(const WeightSpec& spec, const QuantConfig& config);

// One projection's bf16 bits quantized as `config` says, after multiplying its input columns by
// `column_scale` (SmoothQuant) when given.
QuantizedMatrix quantize_bf16_matrix(const std::vector<uint16_t>& bits, int64_t out, int64_t in,
                                     const QuantConfig& config,
                                     const std::vector<float>* column_scale = nullptr);

// Bytes the weights take on the GPU under `config`: quantized projections as QuantizedMatrix
// stores them there (data, scales, zeros), everything else bf16.
int64_t quantized_weight_bytes(const LlamaConfig& model, const QuantConfig& config);

// The CPU reference's weights for `config`: every quantized projection replaced by the values its
// quantized form stands for (after SmoothQuant's migration when the activations are int8, the
// norms then divided by the factors); a tied LM head that is quantized gets its own copy. The
// projections of a GPTQ checkpoint (model.gptq) are left as loaded: they are the stored values.
// `smoothing` is required for W8A8 and ignored otherwise.
void apply_quantization(LlamaWeights& weights, const LlamaConfig& model, const QuantConfig& config,
                        const SmoothingFactors* smoothing);

// What the GPU loader stores for one tensor: bf16 bits, or a quantized projection.
struct LoadedWeight {
  std::vector<uint16_t> bf16;
  std::optional<QuantizedMatrix> quantized;
};
using WeightLoader = std::function<LoadedWeight(const WeightSpec& spec)>;

// A loader over a bf16 source that quantizes as `config` says (round to nearest; SmoothQuant's
// factors applied first for W8A8, the norms divided by them). Safe to call from several threads.
WeightLoader quantizing_loader(TensorSource source, const LlamaConfig& model, QuantConfig config,
                               std::shared_ptr<const SmoothingFactors> smoothing);

// A checked checkpoint's tensors: GPTQ modules as stored when config.weights is their format
// (dequantized to bf16 when it is bf16; InputError for another format or for W8A8, which must
// migrate before quantizing), the rest through quantizing_loader. The checkpoint must outlive it.
WeightLoader checkpoint_weight_loader(const Checkpoint& checkpoint, const LlamaConfig& model,
                                      QuantConfig config,
                                      std::shared_ptr<const SmoothingFactors> smoothing);

// The weight format a checkpoint holds: its GPTQ format (int4, or int8), else bf16.
DType checkpoint_weight_format(const LlamaConfig& model);

}  // namespace inferlab::engine
