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
      layers_(layout.num_layers),
      block_size_(layout.block_size),
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

std::vector<KvStorage::BlockPart> KvStorage::block_parts(int32_t block) {
  const auto slot = static_cast<size_t>(int64_t{block} * block_size_);
  const auto vectors_per_slot = static_cast<size_t>(kv_heads_);
  const auto vector_bytes = static_cast<size_t>(head_dim_ * kv_element_bytes(format_));
  const auto layer_vectors = static_cast<size_t>(slots_per_layer_) * vectors_per_slot;
  const auto block_vectors = static_cast<size_t>(block_size_) * vectors_per_slot;
  std::vector<BlockPart> parts;
  for (DeviceBuffer<unsigned char>* buffer : {&keys_, &values_}) {
    parts.push_back({buffer->data() + slot * vectors_per_slot * vector_bytes,
                     block_vectors * vector_bytes, layer_vectors * vector_bytes});
  }
  if (quantized(format_)) {
    for (DeviceBuffer<float>* scales : {&key_scales_, &value_scales_}) {
      parts.push_back({reinterpret_cast<unsigned char*>(scales->data() + slot * vectors_per_slot),
                       block_vectors * sizeof(float), layer_vectors * sizeof(float)});
    }
  }
  return parts;
}

void KvStorage::copy_blocks_out(std::span<const int32_t> blocks, std::byte* host,
                                cudaStream_t stream) {
  size_t at = 0;
  for (const int32_t block : blocks) {
    for (const BlockPart& part : block_parts(block)) {
      // One 2D copy per part: a run per layer, layer_pitch apart on the device, packed here.
      INFERLAB_CUDA_CHECK(cudaMemcpy2DAsync(
          host + at, part.run_bytes, part.base, part.layer_pitch_bytes, part.run_bytes,
          static_cast<size_t>(layers_), cudaMemcpyDeviceToHost, stream));
      at += part.run_bytes * static_cast<size_t>(layers_);
    }
  }
  INFERLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void KvStorage::copy_blocks_in(std::span<const int32_t> blocks, std::span<const std::byte> host,
                               cudaStream_t stream) {
  size_t at = 0;
  for (const int32_t block : blocks) {
    for (const BlockPart& part : block_parts(block)) {
      INFERLAB_CUDA_CHECK(cudaMemcpy2DAsync(
          part.base, part.layer_pitch_bytes, host.data() + at, part.run_bytes, part.run_bytes,
          static_cast<size_t>(layers_), cudaMemcpyHostToDevice, stream));
      at += part.run_bytes * static_cast<size_t>(layers_);
    }
  }
  INFERLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace inferlab::engine::cuda
