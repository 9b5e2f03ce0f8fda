#pragma once
// The CUDA backend's paged KV cache: per layer, keys and values of every slot in the cache's
// format (bf16, int8 or fp8), and for the quantized formats one fp32 scale per (slot, KV head).
// One scratch block past the pool holds what the padding rows of a captured graph write.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

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
  // Preemption by swap: blocks' keys, values and scales over every layer to `host` (room for
  // bytes_per_block each, block after block; pinned memory, for DMA speed), and back into blocks
  // of the pool. Synchronous on `stream`.
  void copy_blocks_out(std::span<const int32_t> blocks, std::byte* host, cudaStream_t stream);
  void copy_blocks_in(std::span<const int32_t> blocks, std::span<const std::byte> host,
                      cudaStream_t stream);

 private:
  DType format_ = DType::bf16;
  // The device buffers of one block's parts (keys, values, then their scales if any), with the
  // bytes of one layer's run of the block in each and of one layer in all.
  struct BlockPart {
    unsigned char* base;
    size_t run_bytes, layer_pitch_bytes;
  };
  std::vector<BlockPart> block_parts(int32_t block);

  int64_t layers_ = 0, block_size_ = 0;
  int64_t slots_per_layer_ = 0, kv_heads_ = 0, head_dim_ = 0;
  DeviceBuffer<unsigned char> keys_, values_;
  DeviceBuffer<float> key_scales_, value_scales_;
};

}  // namespace inferlab::engine::cuda
