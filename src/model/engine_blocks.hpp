#pragma once
// The inferlab engine's kernel list (src/engine/cuda) for one step of a dense Llama-family model
// on one GPU, as its switches decide it: `--framework inferlab` prices these operators. Each op
// carries the engine's profile class (KernelTag), so that the engine's own measurements can be
// set beside it class by class (fit/engine_profile.hpp) and its calibration can price each
// (class, path, format) (cost/engine/engine_cost.hpp).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/engine_moe_rules.hpp"
#include "model/model_config.hpp"
#include "model/op.hpp"
#include "model/step_graph.hpp"

namespace inferlab {

// The classes `inferlab bench --profile` reports GPU time under, in the engine's launch order.
// all_reduce and all_gather: the collectives of tensor parallelism; moe_route (router, top-k,
// the sort of the slots by expert and, for the GEMM form, their gather) and moe_combine: a
// mixture of experts' MLP block.
inline constexpr std::array<const char*, 15> kEngineKernelClasses = {
    "embedding", "norm",        "gemm_qkv",  "rope_kv_write", "attention",
    "gemm_o",    "all_reduce",  "moe_route", "gemm_gate_up",  "silu_mul",
    "gemm_down", "moe_combine", "lm_head",   "all_gather",    "sampling"};
// True when `name` is one of kEngineKernelClasses.
bool is_engine_kernel_class(const std::string& name);

// Whether the engine runs this model (decoders with rotary attention and a gated MLP, dense on
// one GPU or split over `tp`, mixtures of experts too); others keep the
// fused kernel list of KernelPlan.
bool engine_runs_model(const ModelConfig& model, int tp);

// Whether the engine runs a mixture of experts' experts in a pass of `tokens` on a GPU holding
// `inter` of each expert's channels without reading the experts' row counts on the host
// (engine_moe_form: every form but the per-expert cuBLASLt GEMMs), so that the pass can be
// captured in a CUDA graph.
bool engine_moe_capturable(int64_t tokens, const ModelConfig& model, int64_t inter);

// Rows up to which a projection takes the engine's GEMV kernels (Projector::takes_gemv): the
// numbers of model/engine_gemv_rows.hpp, which the engine's defaults read too.
int64_t engine_gemv_max_rows(DType weights);
// Rows up to which the GEMV is the streaming one (engine/cuda/gemv_stream.hpp).
inline constexpr int64_t kEngineGemvStreamMaxRows = 2;

// int8/int4 weight-only projections on the tensor-core path are dequantized into a bf16 scratch
// of at most this many bytes, a chunk of output rows at a time (a multiple of 64 rows, at least
// 64: projection_workspace.hpp's kChunkCapBytes), each chunk followed by its GEMM.
inline constexpr double kEngineDequantChunkBytes = 64.0 * 1024 * 1024;
// Output rows per chunk for an input width of `in_features` (at least one row).
int64_t engine_dequant_chunk_rows(int64_t in_features);

// Bytes the GPU reads for one projection's weights in the engine's layout
// (QuantizedMatrix::device_bytes): bf16/fp16 2 per weight; int8 and fp8 one per weight and a
// 4-byte scale per output row; int4 half a byte per weight and, per group of `group_size`
// inputs, a 2-byte (fp16) scale and a 1-byte zero point.
double engine_weight_bytes(int64_t out_features, int64_t in_features, DType format,
                           int64_t group_size);

// Bytes of one token's keys (or values) of one KV head in the cache: head_dim values in the
// cache format, plus one fp32 scale for the 8-bit formats.
double engine_kv_vector_bytes(int64_t head_dim, DType kv);

// The label of the format that picks a projection's kernels: "w8a8" for int8 weights with int8
// activations, else the weight format's name ("bf16", "int8", "int4", "fp8").
const char* engine_weight_format_label(const Precision& precision);
const char* engine_kv_format_label(DType kv);

// The operator list of one step (ops cleared first), per switch:
//  * projections of at most engine_gemv_max_rows rows on the GEMV kernels when plan.engine_gemv
//    (path "gemv"), reading the weights in their stored format; otherwise cuBLASLt ("gemm"):
//    bf16 one GEMM; int8/int4 weight-only a dequantization into bf16 and a bf16 GEMM per chunk;
//    fp8 the input quantized per row to E4M3, then an FP8 GEMM; W8A8 the input quantized per
//    row, an int8 GEMM with int32 out, and a kernel applying the scales into bf16;
//  * with plan.engine_fusion on the GEMV path ("gemv_fused"): the RMSNorm computed inside the
//    QKV and gate/up GEMVs, SiLU x mul as the gate/up GEMV's epilogue, the residual add as the
//    O and down GEMVs' epilogue, so no norm or silu_mul kernel runs in the layers (the final
//    norm stays); with plan.engine_rope_in_qkv, RoPE and the KV write as the QKV GEMV's
//    epilogue where engine_rope_in_qkv (model/engine_gemv_rows.hpp) allows, no rope_kv_write;
//  * attention: the flash kernels (prefill, decode) or, with plan.flash_attention off, naive
//    attention: QK^T into fp32 scores, a softmax over them in place, then P V ("naive");
//  * the LM head on each sequence's last row (gathered first: a second "embedding" launch) with
//    fp32 logits, quantized like the other projections; sampling over the fp32 logits.
void build_engine_step_graph(const ModelConfig& model, const StepShape& shape,
                             const Precision& precision, const KernelPlan& plan,
                             const ShardDims& shard, std::vector<Op>& ops);

// Only the attention ops (what changes with the context), appended to `ops`.
void build_engine_context_ops(const ModelConfig& model, const StepShape& shape,
                              const Precision& precision, const KernelPlan& plan,
                              const ShardDims& shard, std::vector<Op>& ops);

}  // namespace inferlab
