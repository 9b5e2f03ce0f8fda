#include "engine/tensor_source.hpp"

#include <cstring>
#include <stdexcept>

#include "engine/bf16.hpp"
#include "engine/init_weights.hpp"

namespace inferlab::engine {

TensorSource checkpoint_tensor_source(const Checkpoint& checkpoint) {
  return [&checkpoint](const WeightSpec& spec) {
    const TensorView* view = checkpoint.find(spec.stored_name);
    if (view == nullptr) {
      throw std::invalid_argument("checkpoint has no tensor '" + spec.stored_name + "'");
    }
    // A part of a fused tensor is its rows [stored_row, stored_row + shape[0]).
    const int64_t first = spec.stored_row * spec.columns();
    const auto count = static_cast<size_t>(spec.elements());
    if (first + spec.elements() > view->info->elements()) {
      throw std::invalid_argument("checkpoint tensor '" + spec.stored_name + "' is too small");
    }
    std::vector<uint16_t> bits(count);
    if (view->info->dtype == TensorDType::bf16) {
      std::memcpy(bits.data(), view->data + 2 * first, count * 2);
      return bits;
    }
    const std::vector<float> values = tensor_to_float(*view, first, spec.elements());
    for (size_t i = 0; i < count; ++i) bits[i] = float_to_bf16(values[i]);
    return bits;
  };
}

TensorSource random_tensor_source(const LlamaConfig& config, uint64_t seed) {
  return [model = config.model, seed](const WeightSpec& spec) {
    return random_tensor_bf16(spec, model, seed);
  };
}

}  // namespace inferlab::engine
