#pragma once
// GPTQ checkpoints as Hugging Face stores them (AutoGPTQ / GPTQModel, read by transformers'
// GPTQ integration): each quantized nn.Linear `P` has P.qweight (I32 [in / pack, out], pack =
// 32 / bits values per word along the input, value j of a word in bits j·bits..), P.qzeros (I32
// [groups, out / pack], packed along the output), P.scales (F16 [groups, out]) and P.g_idx (I32
// [in], the group of each input), and config.json says "quantization_config": {"quant_method":
// "gptq", "bits", "group_size" (−1: one group), "sym", "desc_act", "checkpoint_format"}. In the
// "gptq" checkpoint format (v1, the common one) a stored zero is the real zero minus one; in
// "gptq_v2" it is the zero itself. The weight is w[k, o] = scales[g, o] · (q[k, o] − zero[g, o])
// with g = g_idx[k].
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/gptq_config.hpp"
#include "engine/quant/quantize.hpp"
#include "engine/safetensors_writer.hpp"

namespace inferlab::engine {

class Checkpoint;

// The names of a GPTQ module's tensors, for `weight_name` ending in ".weight".
std::vector<std::string> gptq_tensor_names(const std::string& weight_name);

// Shape and dtype problems of the module `weight_name` [out, in] in `checkpoint` (empty: none).
std::vector<std::string> check_gptq_module(const Checkpoint& checkpoint,
                                           const std::string& weight_name, int64_t out, int64_t in,
                                           const GptqConfig& gptq);

// The module in the engine's layout: 4 bits → int4 with the checkpoint's groups and zeros;
// 8 bits → int8 per output channel (one group, symmetric: zero 128; anything else is refused as
// InputError). InputError naming the tensor when g_idx is not k / group_size.
QuantizedMatrix read_gptq_module(const Checkpoint& checkpoint, const std::string& weight_name,
                                 int64_t out, int64_t in, const GptqConfig& gptq);

// A quantized matrix (int4 with zeros in [1, 15]... any, or int8) as the v1 GPTQ tensors of
// module `weight_name`: qweight, qzeros, scales (fp16), g_idx.
std::vector<TensorData> gptq_module_tensors(const std::string& weight_name,
                                            const QuantizedMatrix& matrix);
// What config.json's quantization_config says for such tensors.
nlohmann::json gptq_quantization_config(const QuantizedMatrix& any_module);

}  // namespace inferlab::engine
