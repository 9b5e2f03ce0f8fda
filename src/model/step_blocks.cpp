#include "model/step_blocks.hpp"

#include "model/op_builders.hpp"

namespace inferlab {

StepBuilder::StepBuilder(const ModelConfig& model, const StepShape& shape,
                         const Precision& precision, const KernelPlan& plan, const ShardDims& shard,
                         NormKind norm_kind, std::vector<Op>& ops)
    : model(model),
      shape(shape),
      precision(precision),
      plan(plan),
      shard(shard),
      norm_kind(norm_kind),
      ops(ops),
      layers(model.num_layers),
      tokens(shape.batch * shape.new_tokens),
      q_dim(shard.q_heads * shard.head_dim),
      kv_dim(shard.kv_heads * shard.head_dim),
      float_dtype(precision.float_dtype),
      float_bytes(dtype_bytes(precision.float_dtype)) {}

Op StepBuilder::gemm(const char* name, int64_t m, int64_t n, int64_t k, bool bias) const {
  const Precision& p = precision;
  return make_gemm_op(name, m, n, k, p.weights, p.activations, float_dtype, p.gemm_compute, bias,
                      p.quant_group_size);
}

Op StepBuilder::norm(const char* name, int64_t rows) const {
  return norm_kind == NormKind::layer
             ? make_layernorm_op(name, rows, shard.hidden, float_dtype, false)
             : make_rmsnorm_op(name, rows, shard.hidden, float_dtype);
}

Op StepBuilder::add_norm(const char* name) const {
  return norm_kind == NormKind::layer
             ? make_layernorm_op(name, tokens, shard.hidden, float_dtype, true)
             : make_add_rmsnorm_op(name, tokens, shard.hidden, float_dtype);
}

void StepBuilder::add_per_layer(Op op) {
  op.scope = Scope::per_layer;
  op.count = layers;
  ops.push_back(op);
}

void StepBuilder::add_all_reduce(const char* name, int64_t count, Scope scope) {
  if (shard.tp == 1) return;
  Op op =
      make_all_reduce_op(name, static_cast<double>(tokens * shard.hidden) * float_bytes, shard.tp);
  op.count = count;
  op.scope = scope;
  ops.push_back(op);
}

void StepBuilder::open_sublayer(const char* norm_name) {
  if (!plan.fuse_add_rmsnorm) add_per_layer(norm(norm_name, tokens));
}

void StepBuilder::close_sublayer(const char* fused_name, const char* add_name) {
  if (plan.fuse_add_rmsnorm) {
    add_per_layer(add_norm(fused_name));
  } else {
    add_per_layer(make_add_op(add_name, tokens, shard.hidden, float_dtype));
  }
}

namespace {

// Eager RoPE gathers the cos and sin rows of the step's positions before the layers.
void add_rope_table_gather(StepBuilder& b) {
  if (b.plan.rope_table_gathers <= 0) return;
  Op gather;
  gather.name = "rope_table_gather";
  gather.kind = OpKind::embedding;  // a row gather, like the embedding
  gather.scope = Scope::pre_layers;
  gather.compute_dtype = b.float_dtype;
  gather.kernels = b.plan.rope_table_gathers;
  // cos and sin rows (head_dim each) for every position of the step, read and written.
  gather.activation_bytes = b.plan.rope_table_gathers * 2.0 *
                            static_cast<double>(b.shape.new_tokens * b.shard.head_dim) *
                            b.float_bytes;
  b.add(gather);
}

}  // namespace

void token_embedding_block(StepBuilder& b) {
  b.add(make_embedding_op("embedding", b.tokens, b.shard.hidden, b.float_dtype));
  add_rope_table_gather(b);
  b.add_all_reduce("embedding_all_reduce", 1, Scope::pre_layers);  // vocab-parallel embedding
}

void token_position_embedding_block(StepBuilder& b) {
  Op embedding = make_embedding_op("embedding", b.tokens, b.shard.hidden, b.float_dtype);
  // Learned positions: a second row gather, added to the token rows.
  embedding.weight_bytes *= 2.0;
  embedding.activation_bytes += static_cast<double>(b.tokens * b.shard.hidden) * b.float_bytes;
  b.add(embedding);
  // The graph has always priced eager frameworks' RoPE table gathers here too, although learned
  // positions read no rotary table; kept so that predictions do not move.
  add_rope_table_gather(b);
  b.add_all_reduce("embedding_all_reduce", 1, Scope::pre_layers);
}

void head_block(StepBuilder& b) {
  if (!b.plan.fuse_add_rmsnorm) {
    // Fused plans fold the final norm into the last layer's residual add.
    Op final_norm = b.norm("final_norm", b.tokens);
    final_norm.scope = Scope::post_layers;
    b.add(final_norm);
  }
  // LM head on the last token of each sequence only, then greedy sampling.
  const DType f = b.float_dtype;
  Op head = make_gemm_op("lm_head", b.shape.batch, b.shard.vocab, b.shard.hidden, f, f, f,
                         f == DType::fp16 ? DType::fp16 : DType::bf16);
  head.scope = Scope::post_layers;
  b.add(head);
  if (b.shard.tp > 1) {
    Op gather = make_all_gather_op(
        "logits_all_gather", static_cast<double>(b.shape.batch * b.shard.vocab) * b.float_bytes,
        b.shard.tp);
    gather.scope = Scope::post_layers;
    b.add(gather);
  }
  const int64_t vocab = b.model.vocab_size;
  Op sample;
  sample.name = "sampling";
  sample.kind = OpKind::sampling;
  sample.scope = Scope::post_layers;
  sample.compute_dtype = f;
  sample.rows = b.shape.batch;
  sample.cols = vocab;
  sample.flops = static_cast<double>(b.shape.batch * vocab);
  sample.activation_bytes = static_cast<double>(b.shape.batch * vocab) * b.float_bytes;
  b.add(sample);
}

}  // namespace inferlab
