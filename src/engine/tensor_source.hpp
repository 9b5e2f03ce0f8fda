#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/checkpoint.hpp"
#include "engine/llama_config.hpp"
#include "engine/llama_weights.hpp"

namespace inferlab::engine {

// Where a GPU backend gets each weight: the bf16 bits of one tensor (nn.Linear layout,
// row-major), asked once per tensor of llama_weight_specs while loading, possibly from several
// threads at once (so a source must be safe to call concurrently).
using TensorSource = std::function<std::vector<uint16_t>(const WeightSpec& spec)>;

// A checked checkpoint's tensors (check_llama_checkpoint first), converted to bf16 (BF16 copied,
// F16 and F32 rounded to nearest even). The checkpoint must outlive the source.
TensorSource checkpoint_tensor_source(const Checkpoint& checkpoint);

// Random weights at the config's shapes: the values init_weights writes with this seed.
TensorSource random_tensor_source(const LlamaConfig& config, uint64_t seed);

}  // namespace inferlab::engine
