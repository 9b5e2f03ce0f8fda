#pragma once
#include "model/model_config.hpp"
#include "model/step_graph.hpp"

namespace inferlab {

// Bytes of parameters one device holds. Linear layers (projections, experts) are stored in
// precision.weights with one 16-bit scale per quant_group_size weights for weight-only int8/int4;
// embedding, LM head, router and norms stay in the float format, as quantized checkpoints
// (AWQ, GPTQ, fp8) ship them.
double weight_bytes_per_device(const ModelConfig& model, const Precision& precision,
                               const ShardDims& shard);

// K and V of one token over all layers on one device.
double kv_bytes_per_token(const ModelConfig& model, DType kv_dtype, const ShardDims& shard);

// FLOPs of one token through the model at context 0 (2 per MAC over the active parameters,
// LM head included, attention excluded).
double dense_flops_per_token(const ModelConfig& model);

}  // namespace inferlab
