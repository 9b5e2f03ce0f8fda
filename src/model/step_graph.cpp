#include "model/step_graph.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/engine_blocks.hpp"
#include "model/model_family.hpp"
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

// The model's family lists its blocks; each appends its operators in execution order.
// build_context_ops (the attention over the cache) lives with the attention blocks.
void build_step_graph(const ModelConfig& model, const StepShape& shape, const Precision& p,
                      const KernelPlan& plan, const ShardDims& s, std::vector<Op>& ops) {
  if (plan.engine && engine_runs_model(model, s.tp)) {
    build_engine_step_graph(model, shape, p, plan, s, ops);
    return;
  }
  ops.clear();
  const ModelFamily& family = model_family(model);
  StepBuilder builder(model, shape, p, plan, s, family.norm, ops);
  for (const Block& block : family.blocks) block.build(builder);
}

}  // namespace inferlab
