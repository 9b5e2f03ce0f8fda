#include <algorithm>
#include <cmath>

#include "model/op_builders.hpp"
#include "model/step_blocks.hpp"

namespace inferlab {

namespace {

// The MLP's tensor-parallel all-reduce and its residual add: fused plans fuse the add into the
// next layer's input norm (the final norm after the last layer).
void close_mlp(StepBuilder& b) {
  b.add_all_reduce("mlp_all_reduce", b.layers, Scope::per_layer);
  b.close_sublayer("mlp_add_next_norm", "mlp_residual_add");
}

// SiLU(gate) x up over `rows` rows: one fused kernel, or SiLU and mul apart. Apart after a
// fused gate/up GEMM (gpt-fast's layout), both read the halves of its output as strided views.
void add_silu_mul(StepBuilder& b, int64_t rows) {
  const int64_t inter = b.shard.intermediate;
  if (b.plan.fuse_silu_mul) {
    b.add_per_layer(make_silu_mul_op("silu_mul", rows, inter, b.float_dtype));
    return;
  }
  const double elems = static_cast<double>(rows * inter);
  Op silu = make_silu_mul_op("silu", rows, inter, b.float_dtype);
  silu.kind = OpKind::silu;
  silu.flops = 5.0 * elems;
  silu.activation_bytes = 2.0 * elems * b.float_bytes;
  silu.strided_input = b.plan.fuse_gate_up;
  b.add_per_layer(silu);
  Op mul = make_add_op("mul", rows, inter, b.float_dtype);
  mul.kind = OpKind::mul;
  mul.strided_input = b.plan.fuse_gate_up;
  b.add_per_layer(mul);
}

// One grouped GEMM over the experts the step touches: `rows` token-expert rows spread evenly
// over `active` experts, each expert's weights read once.
Op expert_gemm(const StepBuilder& b, const char* name, int64_t rows, double active, int64_t n,
               int64_t k) {
  int64_t rows_per_expert = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(rows / active)));
  Op op = b.gemm(name, rows_per_expert, n, k);
  op.kind = OpKind::moe_gemm;
  op.gemm.groups = static_cast<int64_t>(std::ceil(active));
  op.flops = 2.0 * static_cast<double>(rows) * n * k;
  op.weight_bytes *= active;
  op.activation_bytes = static_cast<double>(rows) * (k * dtype_bytes(b.precision.activations) +
                                                     static_cast<double>(n) * b.float_bytes);
  return op;
}

}  // namespace

void gated_mlp_block(StepBuilder& b) {
  const int64_t t = b.tokens, h = b.shard.hidden, inter = b.shard.intermediate;
  b.open_sublayer("post_attn_norm");
  if (b.plan.fuse_gate_up) {
    b.add_per_layer(b.gemm("gate_up_proj", t, 2 * inter, h));
  } else {
    b.add_per_layer(b.gemm("gate_proj", t, inter, h));
    b.add_per_layer(b.gemm("up_proj", t, inter, h));
  }
  add_silu_mul(b, t);
  b.add_per_layer(b.gemm("down_proj", t, h, inter));
  close_mlp(b);
}

void gelu_mlp_block(StepBuilder& b) {
  const int64_t t = b.tokens, h = b.shard.hidden, inter = b.shard.intermediate;
  b.open_sublayer("post_attn_norm");
  b.add_per_layer(b.gemm("fc_in", t, inter, h, true));
  b.add_per_layer(make_gelu_op("gelu", t, inter, b.float_dtype));
  b.add_per_layer(b.gemm("fc_out", t, h, inter, true));
  close_mlp(b);
}

void moe_mlp_block(StepBuilder& b) {
  const int64_t t = b.tokens, h = b.shard.hidden, inter = b.shard.intermediate;
  const ModelConfig& m = b.model;
  b.open_sublayer("post_attn_norm");
  b.add_per_layer(b.gemm("router", t, m.num_experts, h));
  const double active = expected_active_experts(m.num_experts, m.experts_per_token, t);
  const int64_t rows = t * m.experts_per_token;  // each token goes to its top-k experts
  b.add_per_layer(expert_gemm(b, "experts_gate_up", rows, active, 2 * inter, h));
  // The experts' SiLU x up is priced as one fused kernel under every plan.
  b.add_per_layer(make_silu_mul_op("silu_mul", rows, inter, b.float_dtype));
  b.add_per_layer(expert_gemm(b, "experts_down", rows, active, h, inter));
  close_mlp(b);
}

}  // namespace inferlab
