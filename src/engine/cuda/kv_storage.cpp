#include "engine/cuda/kv_storage.hpp"

#include "engine/cuda/fill_kernels.hpp"

namespace inferlab::engine::cuda {

namespace {
bool quantized(DType format) {
  return format != DType::bf16;
}
}  // namespace

int64_t KvStorage::bytes_per_block(const KvCacheLayout& layout, DType format) {
  const int64_t per_head = layout.head_dim * kv_element_bytes(format) + (quantized(format) ? 4 : 0);
  return 2 * layout.block_size * layout.num_layers * layout.num_kv_heads * per_head;
}

double KvStorage::bytes_per_token(const KvCacheLayout& layout, DType format) {
  return static_cast<double>(bytes_per_block(layout, format)) /
         static_cast<double>(layout.block_size);
}

KvStorage::KvStorage(const KvCacheLayout& layout, DType format)
    : format_(format),
      slots_per_layer_(layout.slots() + layout.block_size),
      kv_heads_(layout.num_kv_heads),
      head_dim_(layout.head_dim) {
  const auto vectors = static_cast<size_t>(layout.num_layers * slots_per_layer_ * kv_heads_);
  const auto bytes = vectors * static_cast<size_t>(head_dim_ * kv_element_bytes(format));
  keys_ = DeviceBuffer<unsigned char>(bytes);
  values_ = DeviceBuffer<unsigned char>(bytes);
  if (quantized(format)) {
    key_scales_ = DeviceBuffer<float>(vectors);
    value_scales_ = DeviceBuffer<float>(vectors);
  }
}

KvLayerCache KvStorage::layer(int64_t index) {
  const int64_t vectors = index * slots_per_layer_ * kv_heads_;
  const int64_t offset = vectors * head_dim_ * kv_element_bytes(format_);
  KvLayerCache cache;
  cache.format = format_;
  cache.k = keys_.data() + offset;
  cache.v = values_.data() + offset;
  if (quantized(format_)) {
    cache.k_scale = key_scales_.data() + vectors;
    cache.v_scale = value_scales_.data() + vectors;
  }
  return cache;
}

void KvStorage::fill_random(uint64_t seed, cudaStream_t stream) {
  const size_t elements = keys_.bytes() / static_cast<size_t>(kv_element_bytes(format_));
  cuda::fill_random(keys_.data(), elements, format_, seed, stream);
  cuda::fill_random(values_.data(), elements, format_, seed + 1, stream);
  if (quantized(format_)) {
    fill_value(key_scales_.data(), key_scales_.size(), 1.0f / 64, stream);
    fill_value(value_scales_.data(), value_scales_.size(), 1.0f / 64, stream);
  }
}

}  // namespace inferlab::engine::cuda
