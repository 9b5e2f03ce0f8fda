#include "model/engine_blocks.hpp"
#include "model/family_spec.hpp"
#include "model/op_builders.hpp"
#include "model/step_blocks.hpp"

namespace inferlab {

namespace {

void add_layer(std::vector<Op>& ops, Op op, int64_t layers) {
  op.scope = Scope::per_layer;
  op.count = layers;
  ops.push_back(op);
}

AttentionShape attention_shape(const StepShape& shape, const ShardDims& s) {
  return {shape.batch,      s.q_heads,     s.kv_heads,          s.head_dim,
          shape.new_tokens, shape.context, shape.new_tokens > 1};
}

// GQA heads expanded in memory (K and V), as eager attention without a fused kernel does.
Op repeat_kv_op(const AttentionShape& a, const Precision& p, double kv_read) {
  double fb = dtype_bytes(p.float_dtype);
  Op rep;
  rep.name = "repeat_kv";
  rep.kind = OpKind::repeat_kv;
  rep.compute_dtype = p.float_dtype;
  rep.kernels = 2;
  rep.kv_bytes = kv_read;
  rep.activation_bytes = 2.0 * static_cast<double>(a.batch) * static_cast<double>(a.q_heads) *
                         static_cast<double>(a.kv_len) * static_cast<double>(a.head_dim) * fb;
  rep.context_dependent = true;
  return rep;
}

// Unfused attention as eager frameworks without FlashAttention run it: GQA heads expanded,
// scores written, masked softmax, then P V.
void add_unfused_attention(std::vector<Op>& ops, const ModelConfig& model, const StepShape& shape,
                           const Precision& p, const ShardDims& s) {
  AttentionShape a = attention_shape(shape, s);
  double fb = dtype_bytes(p.float_dtype);
  double b = static_cast<double>(a.batch), hq = static_cast<double>(a.q_heads);
  double d = static_cast<double>(a.head_dim), q = static_cast<double>(a.q_len);
  double kv = static_cast<double>(a.kv_len);
  double kv_read = 2.0 * b * kv * static_cast<double>(a.kv_heads) * d * dtype_bytes(p.kv);
  bool expand = a.q_heads != a.kv_heads;
  if (expand) add_layer(ops, repeat_kv_op(a, p, kv_read), model.num_layers);
  double kv_per_read = expand ? b * hq * kv * d * fb : kv_read / 2.0;
  double scores = b * hq * q * kv;
  Op qk;
  qk.name = "attn_scores";
  qk.kind = OpKind::attention_scores;
  qk.compute_dtype = p.float_dtype;
  qk.gemm = {a.q_len, a.kv_len, a.head_dim, a.batch * a.q_heads};
  qk.flops = 2.0 * scores * d;
  qk.activation_bytes = b * hq * q * d * fb + scores * fb;
  (expand ? qk.activation_bytes : qk.kv_bytes) += kv_per_read;
  qk.context_dependent = true;
  add_layer(ops, qk, model.num_layers);
  Op sm = make_softmax_op("attn_softmax", a.batch * a.q_heads * a.q_len, a.kv_len, p.float_dtype);
  sm.kernels = a.causal ? 2 : 1;  // mask add, then softmax
  sm.activation_bytes *= sm.kernels;
  sm.context_dependent = true;
  add_layer(ops, sm, model.num_layers);
  Op pv;
  pv.name = "attn_context";
  pv.kind = OpKind::attention_context;
  pv.compute_dtype = p.float_dtype;
  pv.gemm = {a.q_len, a.head_dim, a.kv_len, a.batch * a.q_heads};
  pv.flops = 2.0 * scores * d;
  pv.activation_bytes = scores * fb + b * hq * q * d * fb;
  (expand ? pv.activation_bytes : pv.kv_bytes) += kv_per_read;
  pv.context_dependent = true;
  add_layer(ops, pv, model.num_layers);
}

// The first layer's input norm has no residual to add; when the plan fuses adds into norms,
// every later input norm is the previous MLP's residual add.
void open_attention(StepBuilder& b) {
  if (b.plan.fuse_add_rmsnorm) {
    Op first = b.norm("input_norm", b.tokens);
    first.scope = Scope::pre_layers;
    b.add(first);
  } else {
    b.add_per_layer(b.norm("input_norm", b.tokens));
  }
}

void add_qkv_projections(StepBuilder& b) {
  const int64_t t = b.tokens, h = b.shard.hidden;
  const bool bias = b.model.qkv_bias;
  if (b.plan.fuse_qkv) {
    b.add_per_layer(b.gemm("qkv_proj", t, b.q_dim + 2 * b.kv_dim, h, bias));
  } else {
    b.add_per_layer(b.gemm("q_proj", t, b.q_dim, h, bias));
    b.add_per_layer(b.gemm("k_proj", t, b.kv_dim, h, bias));
    b.add_per_layer(b.gemm("v_proj", t, b.kv_dim, h, bias));
  }
}

// K and V written into the cache.
double kv_cache_write_bytes(const StepBuilder& b) {
  return 2.0 * static_cast<double>(b.tokens * b.kv_dim) * dtype_bytes(b.precision.kv);
}

// K and V into the cache, in `kernels` launches.
void add_kv_write(StepBuilder& b, int kernels) {
  const double k_bytes = static_cast<double>(b.tokens * b.kv_dim) * b.float_bytes;
  Op write;
  write.name = "kv_write";
  write.kind = OpKind::kv_write;
  write.compute_dtype = b.float_dtype;
  write.kernels = kernels;
  write.activation_bytes = 2.0 * k_bytes;
  write.kv_bytes = kv_cache_write_bytes(b);
  b.add_per_layer(write);
}

// RoPE on q and k fused with the KV-cache write (vLLM).
void add_rope_kv_write(StepBuilder& b) {
  const double q_bytes = static_cast<double>(b.tokens * b.q_dim) * b.float_bytes;
  const double k_bytes = static_cast<double>(b.tokens * b.kv_dim) * b.float_bytes;
  Op op;
  op.name = "rope_kv_write";
  op.kind = OpKind::rope_kv_write;
  op.compute_dtype = b.float_dtype;
  op.flops = 6.0 * static_cast<double>(b.tokens * (b.q_dim + b.kv_dim));
  op.activation_bytes = (q_bytes + 2.0 * k_bytes) + (q_bytes + k_bytes);  // q,k,v in; q,k out
  op.kv_bytes = kv_cache_write_bytes(b);
  b.add_per_layer(op);
}

// Attention over the cache, the output projection, its all-reduce and the residual add.
void close_attention(StepBuilder& b, bool output_bias) {
  build_context_ops(b.model, b.shape, b.precision, b.plan, b.shard, b.ops);
  b.add_per_layer(b.gemm("o_proj", b.tokens, b.shard.hidden, b.q_dim, output_bias));
  b.add_all_reduce("attn_all_reduce", b.layers, Scope::per_layer);
  b.close_sublayer("post_attn_add_norm", "attn_residual_add");
}

}  // namespace

void build_context_ops(const ModelConfig& model, const StepShape& shape, const Precision& p,
                       const KernelPlan& plan, const ShardDims& s, std::vector<Op>& ops) {
  if (plan.engine && engine_runs_model(model, s.tp)) {
    build_engine_context_ops(model, shape, p, plan, s, ops);
    return;
  }
  if (plan.flash_attention) {
    add_layer(ops, make_attention_op("attention", attention_shape(shape, s), p.float_dtype, p.kv),
              model.num_layers);
  } else {
    add_unfused_attention(ops, model, shape, p, s);
  }
}

void rotary_attention_block(StepBuilder& b) {
  open_attention(b);
  add_qkv_projections(b);
  // Qwen3 (its family's qk_norm): each query and key head RMS-normalised before RoPE.
  if (family_spec(b.model).ops.qk_norm) {
    b.add_per_layer(make_rmsnorm_op("qk_norm", b.tokens * (b.shard.q_heads + b.shard.kv_heads),
                                    b.shard.head_dim, b.float_dtype));
  }
  if (b.plan.fuse_rope_kv_write) {
    add_rope_kv_write(b);
  } else {
    b.add_per_layer(make_rope_op("rope", b.tokens, b.q_dim, b.kv_dim,
                                 b.plan.rope_kernels_per_tensor, b.float_dtype));
    add_kv_write(b, b.plan.kv_write_kernels);
  }
  close_attention(b, false);
}

void learned_position_attention_block(StepBuilder& b) {
  open_attention(b);
  add_qkv_projections(b);
  // Learned positions: no rotary embedding, only the KV-cache write.
  add_kv_write(b, b.plan.fuse_rope_kv_write ? 1 : b.plan.kv_write_kernels);
  close_attention(b, true);  // the GPT family biases every projection
}

}  // namespace inferlab
