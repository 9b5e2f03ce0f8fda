#pragma once
#include <cstdint>

#include "hw/hardware_spec.hpp"
#include "model/model_config.hpp"
#include "predict/options.hpp"
#include "serve/serving_loop.hpp"

namespace inferlab {

// The KV cache a server gets on one device (vLLM's profile run): GPU memory x utilisation,
// less the weights and the activations of the largest batch it will run
// (max_num_batched_tokens tokens), cut into blocks of `block_size` tokens.
struct KvBudget {
  int64_t blocks = 0;  // 0: the model does not fit
  double block_bytes = 0.0;
  double usable_bytes = 0.0, weights_bytes = 0.0, activations_bytes = 0.0;
  bool fits() const { return blocks > 0; }
};
// The budget is for `engine`'s block size and token budget, and is written into its KV cache
// size (kv_blocks, kv_block_bytes).
KvBudget size_kv_cache(SchedulerConfig& engine, const ModelConfig& model,
                       const HardwareSpec& hardware, const PredictOptions& options);

}  // namespace inferlab
