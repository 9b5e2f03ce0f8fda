#include "model/step_graph.hpp"

#include <cmath>
#include <string>

#include "model/op_builders.hpp"
#include "util/error.hpp"

namespace inferlab {

ShardDims shard_dims(const ModelConfig& model, int tp) {
  if (tp < 1 || tp > 1024) {
    throw InputError("tensor-parallel degree must be in [1, 1024], got " + std::to_string(tp));
  }
  auto fail = [&](const std::string& what, int64_t value) {
    throw InputError("--tp " + std::to_string(tp) + " does not divide " + what + " (" +
                     std::to_string(value) + ") of " + model.name);
  };
  if (model.num_heads % tp != 0) fail("num_attention_heads", model.num_heads);
  // More devices than KV heads: each KV head is replicated on tp / kv_heads devices (vLLM).
  if (model.num_kv_heads >= tp ? model.num_kv_heads % tp != 0 : tp % model.num_kv_heads != 0) {
    fail("num_key_value_heads", model.num_kv_heads);
  }
  if (model.intermediate_size % tp != 0) fail("intermediate_size", model.intermediate_size);
  ShardDims s;
  s.tp = tp;
  s.q_heads = model.num_heads / tp;
  s.kv_heads = std::max<int64_t>(1, model.num_kv_heads / tp);
  s.head_dim = model.head_dim;
  s.intermediate = model.intermediate_size / tp;
  s.vocab = (model.vocab_size + tp - 1) / tp;
  s.hidden = model.hidden_size;
  return s;
}

double expected_active_experts(int64_t experts, int64_t per_token, int64_t tokens) {
  double e = static_cast<double>(experts);
  double miss = std::pow(1.0 - static_cast<double>(per_token) / e, static_cast<double>(tokens));
  return e * (1.0 - miss);
}

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
  if (expand) {
    Op rep;
    rep.name = "repeat_kv";
    rep.kind = OpKind::repeat_kv;
    rep.compute_dtype = p.float_dtype;
    rep.kernels = 2;
    rep.kv_bytes = kv_read;
    rep.activation_bytes = 2.0 * b * hq * kv * d * fb;
    rep.context_dependent = true;
    add_layer(ops, rep, model.num_layers);
  }
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

}  // namespace

void build_context_ops(const ModelConfig& model, const StepShape& shape, const Precision& p,
                       const KernelPlan& plan, const ShardDims& s, std::vector<Op>& ops) {
  if (plan.flash_attention) {
    add_layer(ops, make_attention_op("attention", attention_shape(shape, s), p.float_dtype, p.kv),
              model.num_layers);
  } else {
    add_unfused_attention(ops, model, shape, p, s);
  }
}

void build_step_graph(const ModelConfig& model, const StepShape& shape, const Precision& p,
                      const KernelPlan& plan, const ShardDims& s, std::vector<Op>& ops) {
  ops.clear();
  const int64_t layers = model.num_layers;
  const int64_t tokens = shape.batch * shape.new_tokens;
  const DType f = p.float_dtype;
  const double fb = dtype_bytes(f);
  const int64_t q_dim = s.q_heads * s.head_dim, kv_dim = s.kv_heads * s.head_dim;
  auto gemm = [&](const char* name, int64_t m, int64_t n, int64_t k, bool bias = false) {
    return make_gemm_op(name, m, n, k, p.weights, p.activations, f, p.gemm_compute, bias,
                        p.quant_group_size);
  };
  auto all_reduce = [&](const char* name, int64_t count, Scope scope) {
    if (s.tp == 1) return;
    Op op = make_all_reduce_op(name, static_cast<double>(tokens * s.hidden) * fb, s.tp);
    op.count = count;
    op.scope = scope;
    ops.push_back(op);
  };

  // RMSNorm for Llama-style models, LayerNorm (with bias) for the GPT family.
  auto norm = [&](const char* name, int64_t rows) {
    return model.gpt_style ? make_layernorm_op(name, rows, s.hidden, f, false)
                           : make_rmsnorm_op(name, rows, s.hidden, f);
  };
  auto add_norm = [&](const char* name) {
    return model.gpt_style ? make_layernorm_op(name, tokens, s.hidden, f, true)
                           : make_add_rmsnorm_op(name, tokens, s.hidden, f);
  };

  Op embedding = make_embedding_op("embedding", tokens, s.hidden, f);
  if (model.gpt_style) {
    // Learned positions: a second row gather, added to the token rows.
    embedding.weight_bytes *= 2.0;
    embedding.activation_bytes += static_cast<double>(tokens * s.hidden) * fb;
  }
  ops.push_back(embedding);
  if (plan.rope_table_gathers > 0) {
    Op gather;
    gather.name = "rope_table_gather";
    gather.kind = OpKind::embedding;  // a row gather, like the embedding
    gather.scope = Scope::pre_layers;
    gather.compute_dtype = f;
    gather.kernels = plan.rope_table_gathers;
    // cos and sin rows (head_dim each) for every position of the step, read and written.
    gather.activation_bytes =
        plan.rope_table_gathers * 2.0 * static_cast<double>(shape.new_tokens * s.head_dim) * fb;
    ops.push_back(gather);
  }
  all_reduce("embedding_all_reduce", 1, Scope::pre_layers);  // vocab-parallel embedding
  if (plan.fuse_add_rmsnorm) {
    // The first layer's input norm has no residual to add; every later norm fuses the add.
    Op first = norm("input_norm", tokens);
    first.scope = Scope::pre_layers;
    ops.push_back(first);
  } else {
    add_layer(ops, norm("input_norm", tokens), layers);
  }

  // Attention block.
  if (plan.fuse_qkv) {
    add_layer(ops, gemm("qkv_proj", tokens, q_dim + 2 * kv_dim, s.hidden, model.qkv_bias), layers);
  } else {
    add_layer(ops, gemm("q_proj", tokens, q_dim, s.hidden, model.qkv_bias), layers);
    add_layer(ops, gemm("k_proj", tokens, kv_dim, s.hidden, model.qkv_bias), layers);
    add_layer(ops, gemm("v_proj", tokens, kv_dim, s.hidden, model.qkv_bias), layers);
  }
  const double q_bytes = static_cast<double>(tokens * q_dim) * fb;
  const double k_bytes = static_cast<double>(tokens * kv_dim) * fb;
  const double kv_cache_write = 2.0 * static_cast<double>(tokens * kv_dim) * dtype_bytes(p.kv);
  // K and V into the cache, in `kernels` launches.
  auto kv_write = [&](int kernels) {
    Op write;
    write.name = "kv_write";
    write.kind = OpKind::kv_write;
    write.compute_dtype = f;
    write.kernels = kernels;
    write.activation_bytes = 2.0 * k_bytes;
    write.kv_bytes = kv_cache_write;
    add_layer(ops, write, layers);
  };
  if (model.gpt_style) {
    // Learned positions: no rotary embedding, only the KV-cache write.
    kv_write(plan.fuse_rope_kv_write ? 1 : plan.kv_write_kernels);
  } else if (plan.fuse_rope_kv_write) {
    Op op;
    op.name = "rope_kv_write";
    op.kind = OpKind::rope_kv_write;
    op.compute_dtype = f;
    op.flops = 6.0 * static_cast<double>(tokens * (q_dim + kv_dim));
    op.activation_bytes = (q_bytes + 2.0 * k_bytes) + (q_bytes + k_bytes);  // q,k,v in; q,k out
    op.kv_bytes = kv_cache_write;
    add_layer(ops, op, layers);
  } else {
    add_layer(ops, make_rope_op("rope", tokens, q_dim, kv_dim, plan.rope_kernels_per_tensor, f),
              layers);
    kv_write(plan.kv_write_kernels);
  }
  build_context_ops(model, shape, p, plan, s, ops);
  add_layer(ops, gemm("o_proj", tokens, s.hidden, q_dim, model.gpt_style), layers);
  all_reduce("attn_all_reduce", layers, Scope::per_layer);
  if (plan.fuse_add_rmsnorm) {
    add_layer(ops, add_norm("post_attn_add_norm"), layers);
  } else {
    add_layer(ops, make_add_op("attn_residual_add", tokens, s.hidden, f), layers);
    add_layer(ops, norm("post_attn_norm", tokens), layers);
  }

  // MLP block (dense or mixture of experts).
  int64_t mlp_rows = tokens;
  if (model.gpt_style) {
    add_layer(ops, gemm("fc_in", tokens, s.intermediate, s.hidden, true), layers);
    add_layer(ops, make_gelu_op("gelu", tokens, s.intermediate, f), layers);
    add_layer(ops, gemm("fc_out", tokens, s.hidden, s.intermediate, true), layers);
  } else if (model.is_moe()) {
    add_layer(ops, gemm("router", tokens, model.num_experts, s.hidden), layers);
    double active = expected_active_experts(model.num_experts, model.experts_per_token, tokens);
    mlp_rows = tokens * model.experts_per_token;
    auto expert_gemm = [&](const char* name, int64_t n, int64_t k) {
      int64_t rows_per_expert =
          std::max<int64_t>(1, static_cast<int64_t>(std::ceil(mlp_rows / active)));
      Op op = gemm(name, rows_per_expert, n, k);
      op.kind = OpKind::moe_gemm;
      op.gemm.groups = static_cast<int64_t>(std::ceil(active));
      op.flops = 2.0 * static_cast<double>(mlp_rows) * n * k;
      op.weight_bytes *= active;
      op.activation_bytes = static_cast<double>(mlp_rows) *
                            (k * dtype_bytes(p.activations) + static_cast<double>(n) * fb);
      return op;
    };
    add_layer(ops, expert_gemm("experts_gate_up", 2 * s.intermediate, s.hidden), layers);
    add_layer(ops, make_silu_mul_op("silu_mul", mlp_rows, s.intermediate, f), layers);
    add_layer(ops, expert_gemm("experts_down", s.hidden, s.intermediate), layers);
  } else {
    if (plan.fuse_gate_up) {
      add_layer(ops, gemm("gate_up_proj", tokens, 2 * s.intermediate, s.hidden), layers);
    } else {
      add_layer(ops, gemm("gate_proj", tokens, s.intermediate, s.hidden), layers);
      add_layer(ops, gemm("up_proj", tokens, s.intermediate, s.hidden), layers);
    }
    if (plan.fuse_silu_mul) {
      add_layer(ops, make_silu_mul_op("silu_mul", tokens, s.intermediate, f), layers);
    } else {
      const double elems = static_cast<double>(tokens * s.intermediate);
      Op silu = make_silu_mul_op("silu", tokens, s.intermediate, f);
      silu.kind = OpKind::silu;
      silu.flops = 5.0 * elems;
      silu.activation_bytes = 2.0 * elems * fb;
      add_layer(ops, silu, layers);
      Op mul = make_add_op("mul", tokens, s.intermediate, f);
      mul.kind = OpKind::mul;
      add_layer(ops, mul, layers);
    }
    add_layer(ops, gemm("down_proj", tokens, s.hidden, s.intermediate), layers);
  }
  all_reduce("mlp_all_reduce", layers, Scope::per_layer);
  if (plan.fuse_add_rmsnorm) {
    // The next layer's input norm (the final norm after the last layer) with the residual add.
    add_layer(ops, add_norm("mlp_add_next_norm"), layers);
  } else {
    add_layer(ops, make_add_op("mlp_residual_add", tokens, s.hidden, f), layers);
    Op final_norm = norm("final_norm", tokens);
    final_norm.scope = Scope::post_layers;
    ops.push_back(final_norm);
  }

  // LM head on the last token of each sequence only, then greedy sampling.
  Op head = make_gemm_op("lm_head", shape.batch, s.vocab, s.hidden, f, f, f,
                         p.float_dtype == DType::fp16 ? DType::fp16 : DType::bf16);
  head.scope = Scope::post_layers;
  ops.push_back(head);
  if (s.tp > 1) {
    Op gather = make_all_gather_op("logits_all_gather",
                                   static_cast<double>(shape.batch * s.vocab) * fb, s.tp);
    gather.scope = Scope::post_layers;
    ops.push_back(gather);
  }
  Op sample;
  sample.name = "sampling";
  sample.kind = OpKind::sampling;
  sample.scope = Scope::post_layers;
  sample.compute_dtype = f;
  sample.rows = shape.batch;
  sample.cols = model.vocab_size;
  sample.flops = static_cast<double>(shape.batch * model.vocab_size);
  sample.activation_bytes = static_cast<double>(shape.batch * model.vocab_size) * fb;
  ops.push_back(sample);
}

}  // namespace inferlab
