#pragma once
// The CUDA backend's paged KV cache: per layer, keys and values of every slot in the cache's
// format (bf16, int8 or fp8), and for the quantized formats one fp32 scale per (slot, KV head).
// One scratch block past the pool holds what the padding rows of a captured graph write.
#include <cstdint>

#include "engine/cuda/attention.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/kv_cache.hpp"
#include "util/dtype.hpp"

namespace inferlab::engine::cuda {

class KvStorage {
 public:
  KvStorage() = default;
  KvStorage(const KvCacheLayout& layout, DType format);

  // Device bytes one block of the pool takes (keys, values and their scales, every layer).
  static int64_t bytes_per_block(const KvCacheLayout& layout, DType format);
  // Bytes of one token's keys and values over all layers (scales included): the roofline's KV
  // bytes per context token.
  static double bytes_per_token(const KvCacheLayout& layout, DType format);

  KvLayerCache layer(int64_t index);
  // Every slot random: bf16 values uniform in [-1, 1), or random int8 / finite E4M3 codes with
  // scales of 1/64 (what a cache of unit-scale values holds).
  void fill_random(uint64_t seed, cudaStream_t stream);
  DType format() const { return format_; }

 private:
  DType format_ = DType::bf16;
  int64_t slots_per_layer_ = 0, kv_heads_ = 0, head_dim_ = 0;
  DeviceBuffer<unsigned char> keys_, values_;
  DeviceBuffer<float> key_scales_, value_scales_;
};

}  // namespace inferlab::engine::cuda
