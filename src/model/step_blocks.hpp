#pragma once
#include <cstdint>
#include <vector>

#include "model/model_config.hpp"
#include "model/op.hpp"
#include "model/step_graph.hpp"

namespace inferlab {

// How a family normalizes activations: RMSNorm (Llama and its kin) or LayerNorm with a bias
// (the GPT family).
enum class NormKind { rms, layer };

// What a block builder sees: one step, its sizes on one device, and the op list it appends to.
// Blocks are pre-norm residual sub-layers. Each opens with its norm, unless the plan fuses that
// norm into the previous block's residual add, and closes with its residual add (fused with the
// next norm when the plan says so).
struct StepBuilder {
  StepBuilder(const ModelConfig& model, const StepShape& shape, const Precision& precision,
              const KernelPlan& plan, const ShardDims& shard, NormKind norm_kind,
              std::vector<Op>& ops);

  const ModelConfig& model;
  const StepShape& shape;
  const Precision& precision;
  const KernelPlan& plan;
  const ShardDims& shard;
  const NormKind norm_kind;
  std::vector<Op>& ops;
  const int64_t layers;  // count of every per-layer op
  const int64_t tokens;  // new tokens of the step, all sequences
  const int64_t q_dim, kv_dim;
  const DType float_dtype;
  const double float_bytes;

  // A projection of `tokens`-like rows in the step's weight and GEMM formats.
  Op gemm(const char* name, int64_t m, int64_t n, int64_t k, bool bias = false) const;
  // The family's norm over `rows` rows of the hidden size, and the norm with the residual add.
  Op norm(const char* name, int64_t rows) const;
  Op add_norm(const char* name) const;

  void add(const Op& op) { ops.push_back(op); }
  void add_per_layer(Op op);
  // A ring all-reduce of the step's hidden states; nothing at tp 1.
  void add_all_reduce(const char* name, int64_t count, Scope scope);
  // A sub-layer's opening norm, when the plan runs it as its own kernel.
  void open_sublayer(const char* norm_name);
  // A sub-layer's residual add: fused with the next norm, or a plain add.
  void close_sublayer(const char* fused_name, const char* add_name);
};

// One block of a step: appends its operators, in execution order.
using BlockBuilder = void (*)(StepBuilder&);

// Embedding blocks (pre-layers): the token rows, and the learned position rows of the GPT
// family; the vocab-parallel all-reduce.
void token_embedding_block(StepBuilder& b);
void token_position_embedding_block(StepBuilder& b);

// Attention blocks (per layer): norm, QKV, positions and the KV-cache write, attention, output
// projection, all-reduce, residual. Rotary: RoPE on q and k. Learned positions (GPT): no RoPE and
// a biased output projection.
void rotary_attention_block(StepBuilder& b);
void learned_position_attention_block(StepBuilder& b);

// MLP blocks (per layer): norm, MLP, all-reduce, residual. Gated: SwiGLU (gate, up, SiLU x up,
// down). GELU: fc_in, GELU, fc_out with biases. MoE: router and grouped top-k expert SwiGLU.
void gated_mlp_block(StepBuilder& b);
void gelu_mlp_block(StepBuilder& b);
void moe_mlp_block(StepBuilder& b);

// Head (post-layers): final norm, LM head on each sequence's last token, logits all-gather,
// greedy sampling.
void head_block(StepBuilder& b);

}  // namespace inferlab
