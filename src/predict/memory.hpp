#pragma once
#include "model/model_config.hpp"
#include "model/step_graph.hpp"

namespace inferlab {

// Memory one device needs for a request batch. Not fitting is a result, not an error.
struct MemoryEstimate {
  double weights_bytes = 0.0;
  double kv_cache_bytes = 0.0;     // batch x (input + output) tokens
  double activations_bytes = 0.0;  // peak live tensors of one prefill layer, plus logits
  double total_bytes = 0.0;
  double capacity_bytes = 0.0;  // the GPU's memory
  double usable_bytes = 0.0;    // capacity x gpu_memory_utilization
  bool fits = false;
};

MemoryEstimate estimate_memory(const ModelConfig& model, const Precision& precision,
                               const KernelPlan& plan, const ShardDims& shard, int64_t batch,
                               int64_t input_tokens, int64_t output_tokens, double capacity_bytes,
                               double gpu_memory_utilization);

}  // namespace inferlab
