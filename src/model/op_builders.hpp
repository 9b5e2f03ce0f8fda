#pragma once
#include <cstdint>

#include "model/op.hpp"

namespace inferlab {

// Single operators with their FLOPs and bytes. The step graph is made of these, and
// `inferlab op` prices them one at a time. Byte counts are the fewest bytes the op must move
// (each input read once, each output written once).

// y[m, n] = x[m, k] W[n, k]^T (+ bias). weight_dtype may be narrower than compute (weight-only
// quantization: group scales of one 16-bit value per `group_size` weights are counted).
Op make_gemm_op(const char* name, int64_t m, int64_t n, int64_t k, DType weight_dtype,
                DType input_dtype, DType output_dtype, DType compute_dtype, bool bias = false,
                int64_t group_size = 128);

// Fused attention over a KV cache: q_len new tokens attend kv_len tokens (causal within the
// new ones when causal is set).
Op make_attention_op(const char* name, const AttentionShape& shape, DType float_dtype,
                     DType kv_dtype);
// Pairs (query, key) that one sequence evaluates: q_len*kv_len, less the masked triangle.
double attention_pairs(const AttentionShape& shape);

Op make_rmsnorm_op(const char* name, int64_t tokens, int64_t hidden, DType dtype);
Op make_add_rmsnorm_op(const char* name, int64_t tokens, int64_t hidden, DType dtype);
Op make_add_op(const char* name, int64_t tokens, int64_t hidden, DType dtype);
Op make_silu_mul_op(const char* name, int64_t tokens, int64_t intermediate, DType dtype);
Op make_softmax_op(const char* name, int64_t rows, int64_t cols, DType dtype);
Op make_embedding_op(const char* name, int64_t tokens, int64_t hidden, DType dtype);
// Rotary embedding of q (tokens x q_dim) and k (tokens x kv_dim) in `kernels_per_tensor`
// separate kernels each, every one reading and writing a whole tensor (the unfused form).
Op make_rope_op(const char* name, int64_t tokens, int64_t q_dim, int64_t kv_dim,
                int kernels_per_tensor, DType dtype);

// Ring collectives over `devices`; bytes is the payload each device holds.
Op make_all_reduce_op(const char* name, double bytes, int devices);
Op make_all_gather_op(const char* name, double bytes, int devices);

// GPT family: LayerNorm (scale and bias; `add` fuses the residual add before it) and GELU.
Op make_layernorm_op(const char* name, int64_t tokens, int64_t hidden, DType dtype, bool add);
Op make_gelu_op(const char* name, int64_t tokens, int64_t intermediate, DType dtype);

}  // namespace inferlab
