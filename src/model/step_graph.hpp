#pragma once
#include <cstdint>
#include <vector>

#include "model/model_config.hpp"
#include "model/op.hpp"

namespace inferlab {

// One forward step: a prefill of `batch` sequences of `new_tokens` tokens each, or a decode of
// `batch` sequences with one new token each. `context` is the number of tokens each sequence
// attends, the new ones included (prefill with no earlier context: context == new_tokens).
struct StepShape {
  Phase phase = Phase::prefill;
  int64_t batch = 1;
  int64_t new_tokens = 1;
  int64_t context = 1;
  // The experts a mixture of experts reaches in this step, when its `batch` sequences of
  // `new_tokens` do not say it: the serving simulator prices an iteration's rows as one flat pass
  // of batch 1, yet its rows are many sequences' of their own lengths (tokens of one sequence
  // route alike: model/moe_routing.hpp). 0: from batch and new_tokens.
  double routed_experts = 0.0;
};

// Storage and math formats. `activations` is the format GEMMs read their input in (int8 or fp8
// for W8A8); `float_dtype` is what everything else runs in (bf16 or fp16).
struct Precision {
  DType weights = DType::bf16;
  DType activations = DType::bf16;
  DType kv = DType::bf16;
  DType float_dtype = DType::bf16;
  DType gemm_compute = DType::bf16;  // the matrix-unit format the projections run in
  int64_t quant_group_size = 128;
};

// Which operators run as separate kernels. The framework decides (predict/framework.hpp); the
// graph only follows the plan.
struct KernelPlan {
  bool fuse_qkv = true;
  bool fuse_gate_up = true;
  bool fuse_add_rmsnorm = true;
  bool fuse_silu_mul = true;
  bool fuse_rope_kv_write = true;
  bool flash_attention = true;
  int rope_kernels_per_tensor = 1;  // eager rotate-half RoPE: mul, slice-neg, cat, mul, add
  int kv_write_kernels = 1;         // eager static caches write K and V separately
  int rope_table_gathers = 0;       // eager RoPE gathers cos and sin rows for the positions
  // The inferlab engine's own kernel list (model/engine_blocks.cpp) for the dense Llama family:
  // its switches decide which kernels run. Other families keep the fused list above.
  bool engine = false;
  bool engine_gemv = true;     // few-row projections on the engine's GEMV kernels, not cuBLASLt
  bool engine_fusion = false;  // on the GEMV path: RMSNorm, SiLU x mul and residual adds fused in
  // With fusion, RoPE and the KV write in the QKV GEMV's epilogue where engine_rope_in_qkv
  // (model/engine_gemv_rows.hpp) allows; off: rope_kv_write's kernel (engines before it).
  bool engine_rope_in_qkv = false;
  // The streamed flash decode (bf16 caches) reads the cache rows of earlier passes before its
  // grid wait (engine/cuda/attention.hpp's cache_before_wait): path flash_decode_early; off: all
  // after it (engines before 2026-11-29's session 16).
  bool engine_early_cache_reads = false;
};

// Dimensions of one tensor-parallel shard. Throws InputError when tp does not divide the heads,
// the KV heads (or the reverse, for replicated KV heads) or the MLP width.
struct ShardDims {
  int tp = 1;
  int64_t q_heads = 0, kv_heads = 0, head_dim = 0;
  int64_t intermediate = 0, vocab = 0, hidden = 0;
};
ShardDims shard_dims(const ModelConfig& model, int tp);

// Builds the operator list of one step, per device, in execution order: the blocks of the
// model's family (model/model_family.hpp), each from model/step_blocks.hpp. `ops` is cleared
// and refilled, so sweeps reuse its storage.
void build_step_graph(const ModelConfig& model, const StepShape& shape, const Precision& precision,
                      const KernelPlan& plan, const ShardDims& shard, std::vector<Op>& ops);

// Only the operators whose cost depends on the context length (attention and its unfused
// parts), for re-pricing decode steps one context at a time.
// Appends to `ops`; the attention blocks call it too.
void build_context_ops(const ModelConfig& model, const StepShape& shape, const Precision& precision,
                       const KernelPlan& plan, const ShardDims& shard, std::vector<Op>& ops);

// Expected number of distinct experts hit when `tokens` tokens each pick k of E experts
// uniformly: E (1 - (1 - k/E)^tokens).
double expected_active_experts(int64_t experts, int64_t per_token, int64_t tokens);

}  // namespace inferlab
