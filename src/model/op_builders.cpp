#include "model/op_builders.hpp"

namespace inferlab {

Op make_gemm_op(const char* name, int64_t m, int64_t n, int64_t k, DType weight_dtype,
                DType input_dtype, DType output_dtype, DType compute_dtype, bool bias,
                int64_t group_size) {
  Op op;
  op.name = name;
  op.kind = OpKind::gemm;
  op.compute_dtype = compute_dtype;
  op.gemm = {m, n, k, 1};
  double md = static_cast<double>(m), nd = static_cast<double>(n), kd = static_cast<double>(k);
  op.flops = 2.0 * md * nd * kd + (bias ? md * nd : 0.0);
  double weights = nd * kd * dtype_bytes(weight_dtype);
  bool weight_only_quant = dtype_bytes(weight_dtype) < dtype_bytes(compute_dtype) &&
                           (weight_dtype == DType::int4 || weight_dtype == DType::int8);
  if (weight_only_quant) weights += nd * kd / static_cast<double>(group_size) * 2.0;
  if (bias) weights += nd * 2.0;
  op.weight_bytes = weights;
  op.activation_bytes = md * kd * dtype_bytes(input_dtype) + md * nd * dtype_bytes(output_dtype);
  return op;
}

double attention_pairs(const AttentionShape& s) {
  double q = static_cast<double>(s.q_len), kv = static_cast<double>(s.kv_len);
  // Query i of the new block (0-based) sits at position kv-q+i and sees kv-q+i+1 keys.
  return s.causal ? q * kv - q * (q - 1.0) / 2.0 : q * kv;
}

Op make_attention_op(const char* name, const AttentionShape& shape, DType float_dtype,
                     DType kv_dtype) {
  Op op;
  op.name = name;
  op.kind = OpKind::attention;
  op.compute_dtype = float_dtype;
  op.attention = shape;
  op.context_dependent = true;
  double b = static_cast<double>(shape.batch), d = static_cast<double>(shape.head_dim);
  double hq = static_cast<double>(shape.q_heads), hkv = static_cast<double>(shape.kv_heads);
  op.flops = 4.0 * b * hq * d * attention_pairs(shape);  // QK^T and PV, 2 FLOPs per MAC
  double q_elems = b * static_cast<double>(shape.q_len) * hq * d;
  op.activation_bytes = 2.0 * q_elems * dtype_bytes(float_dtype);  // Q in, O out
  op.kv_bytes = 2.0 * b * static_cast<double>(shape.kv_len) * hkv * d * dtype_bytes(kv_dtype);
  return op;
}

Op make_rmsnorm_op(const char* name, int64_t tokens, int64_t hidden, DType dtype) {
  Op op;
  op.name = name;
  op.kind = OpKind::rmsnorm;
  op.compute_dtype = dtype;
  op.rows = tokens;
  op.cols = hidden;
  double elems = static_cast<double>(tokens) * static_cast<double>(hidden);
  op.flops = 4.0 * elems;  // square, sum, scale, weight
  op.activation_bytes = 2.0 * elems * dtype_bytes(dtype);
  op.weight_bytes = static_cast<double>(hidden) * dtype_bytes(dtype);
  return op;
}

Op make_add_rmsnorm_op(const char* name, int64_t tokens, int64_t hidden, DType dtype) {
  Op op = make_rmsnorm_op(name, tokens, hidden, dtype);
  op.kind = OpKind::add_rmsnorm;
  double elems = static_cast<double>(tokens) * static_cast<double>(hidden);
  op.flops += elems;
  op.activation_bytes = 4.0 * elems * dtype_bytes(dtype);  // x, residual in; both out
  return op;
}

Op make_add_op(const char* name, int64_t tokens, int64_t hidden, DType dtype) {
  Op op;
  op.name = name;
  op.kind = OpKind::add;
  op.compute_dtype = dtype;
  double elems = static_cast<double>(tokens) * static_cast<double>(hidden);
  op.flops = elems;
  op.activation_bytes = 3.0 * elems * dtype_bytes(dtype);
  return op;
}

Op make_silu_mul_op(const char* name, int64_t tokens, int64_t intermediate, DType dtype) {
  Op op;
  op.name = name;
  op.kind = OpKind::silu_mul;
  op.compute_dtype = dtype;
  double elems = static_cast<double>(tokens) * static_cast<double>(intermediate);
  op.flops = 6.0 * elems;  // exp, add, divide, two multiplies (SiLU counted as 5)
  op.activation_bytes = 3.0 * elems * dtype_bytes(dtype);
  return op;
}

Op make_softmax_op(const char* name, int64_t rows, int64_t cols, DType dtype) {
  Op op;
  op.name = name;
  op.kind = OpKind::attention_softmax;
  op.compute_dtype = dtype;
  op.rows = rows;
  op.cols = cols;
  double elems = static_cast<double>(rows) * static_cast<double>(cols);
  op.flops = 5.0 * elems;  // max, subtract, exp, sum, divide
  op.activation_bytes = 2.0 * elems * dtype_bytes(dtype);
  return op;
}

Op make_rope_op(const char* name, int64_t tokens, int64_t q_dim, int64_t kv_dim,
                int kernels_per_tensor, DType dtype) {
  const double fb = dtype_bytes(dtype);
  const double q_bytes = static_cast<double>(tokens * q_dim) * fb;
  const double k_bytes = static_cast<double>(tokens * kv_dim) * fb;
  Op rope;
  rope.name = name;
  rope.kind = OpKind::rope;
  rope.compute_dtype = dtype;
  rope.kernels = 2 * kernels_per_tensor;  // q and k
  rope.flops = 6.0 * static_cast<double>(tokens * (q_dim + kv_dim));
  rope.activation_bytes = kernels_per_tensor * 2.0 * (q_bytes + k_bytes);
  return rope;
}

Op make_embedding_op(const char* name, int64_t tokens, int64_t hidden, DType dtype) {
  Op op;
  op.name = name;
  op.kind = OpKind::embedding;
  op.scope = Scope::pre_layers;
  op.compute_dtype = dtype;
  double elems = static_cast<double>(tokens) * static_cast<double>(hidden);
  op.weight_bytes = elems * dtype_bytes(dtype);  // rows gathered from the table
  op.activation_bytes = elems * dtype_bytes(dtype) + static_cast<double>(tokens) * 8.0;
  return op;
}

Op make_all_reduce_op(const char* name, double bytes, int devices) {
  Op op;
  op.name = name;
  op.kind = OpKind::all_reduce;
  op.comm_bytes = bytes;
  op.comm_devices = devices;
  return op;
}

Op make_all_gather_op(const char* name, double bytes, int devices) {
  Op op = make_all_reduce_op(name, bytes, devices);
  op.kind = OpKind::all_gather;
  return op;
}

Op make_layernorm_op(const char* name, int64_t tokens, int64_t hidden, DType dtype, bool add) {
  Op op = add ? make_add_rmsnorm_op(name, tokens, hidden, dtype)
              : make_rmsnorm_op(name, tokens, hidden, dtype);
  op.kind = add ? OpKind::add_layernorm : OpKind::layernorm;
  const double elems = static_cast<double>(tokens) * static_cast<double>(hidden);
  op.flops += 3.0 * elems;  // the mean, centring, and the bias
  op.weight_bytes *= 2.0;   // scale and bias
  return op;
}

Op make_gelu_op(const char* name, int64_t tokens, int64_t intermediate, DType dtype) {
  Op op;
  op.name = name;
  op.kind = OpKind::gelu;
  op.compute_dtype = dtype;
  const double elems = static_cast<double>(tokens) * static_cast<double>(intermediate);
  op.flops = 5.0 * elems;  // tanh approximation: a cube, FMAs, tanh, the product
  op.activation_bytes = 2.0 * elems * dtype_bytes(dtype);
  return op;
}

}  // namespace inferlab
