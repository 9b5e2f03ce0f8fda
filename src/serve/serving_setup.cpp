#include "serve/serving_setup.hpp"

#include <cmath>

#include "model/footprint.hpp"
#include "predict/framework.hpp"
#include "predict/memory.hpp"

namespace inferlab {

KvBudget size_kv_cache(SchedulerConfig& engine, const ModelConfig& model,
                       const HardwareSpec& hardware, const PredictOptions& options) {
  const Precision precision = resolve_precision(options, hardware);
  const KernelPlan plan = kernel_plan_of(options);
  const ShardDims shard = shard_dims(model, options.tp);
  const MemoryEstimate m =
      estimate_memory(model, precision, plan, shard, 1, engine.max_num_batched_tokens, 1,
                      hardware.memory_bytes, options.gpu_memory_utilization);
  KvBudget b;
  b.usable_bytes = m.usable_bytes;
  b.weights_bytes = m.weights_bytes;
  b.activations_bytes = m.activations_bytes;
  b.block_bytes =
      static_cast<double>(engine.block_size) * kv_bytes_per_token(model, precision.kv, shard);
  const double room = b.usable_bytes - b.weights_bytes - b.activations_bytes;
  b.blocks = room > 0.0 ? static_cast<int64_t>(std::floor(room / b.block_bytes)) : 0;
  engine.kv_blocks = b.blocks;
  engine.kv_block_bytes = b.block_bytes;
  return b;
}

}  // namespace inferlab
