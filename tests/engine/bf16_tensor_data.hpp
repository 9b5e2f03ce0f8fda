#pragma once
// A checkpoint tensor written by hand for the loader's tests: bf16 values of the given fp32 row
// blocks, one after the other (a fused or stacked tensor holds several).
#include <cstdint>
#include <string>
#include <vector>

#include "engine/bf16.hpp"
#include "engine/safetensors_writer.hpp"

namespace inferlab::engine::testing {

inline TensorData bf16_tensor(const std::string& name, std::vector<int64_t> shape,
                              const std::vector<const std::vector<float>*>& row_blocks) {
  TensorData tensor{{name, TensorDType::bf16, std::move(shape)}, {}};
  for (const std::vector<float>* block : row_blocks) {
    for (float value : *block) {
      const uint16_t bits = float_to_bf16(value);
      tensor.bytes.push_back(static_cast<uint8_t>(bits & 0xff));
      tensor.bytes.push_back(static_cast<uint8_t>(bits >> 8));
    }
  }
  return tensor;
}

}  // namespace inferlab::engine::testing
