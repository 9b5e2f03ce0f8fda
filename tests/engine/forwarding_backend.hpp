#pragma once
// A test backend that passes every call to another; wrappers (counting, perturbing) derive from it
// and override only what they watch or change.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/backend.hpp"

namespace inferlab::engine {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(Backend& inner) : inner_(inner) {}
  const LlamaConfig& config() const override { return inner_.config(); }
  const KvCacheLayout& kv_layout() const override { return inner_.kv_layout(); }
  ForwardResult forward(const ForwardBatch& batch) override { return inner_.forward(batch); }
  void fill_kv_cache_random(uint64_t seed) override { inner_.fill_kv_cache_random(seed); }
  int64_t kv_block_host_bytes() const override { return inner_.kv_block_host_bytes(); }
  std::unique_ptr<KvHostCopy> copy_kv_blocks_to_host(std::span<const int32_t> blocks) override {
    return inner_.copy_kv_blocks_to_host(blocks);
  }
  void copy_kv_blocks_from_host(std::span<const int32_t> blocks,
                                std::span<const std::byte> host) override {
    inner_.copy_kv_blocks_from_host(blocks, host);
  }

 protected:
  Backend& inner_;
};

}  // namespace inferlab::engine
