#pragma once
// A backend that passes everything to another and counts how its passes brought logits back:
// forward() with some chunk asking for every row's logits (to the host), or forward_sample_rows
// (ids only). Tests of the verify passes check which one greedy and sampled verdicts take.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/backend.hpp"

namespace inferlab::engine {

class CountingBackend final : public Backend {
 public:
  explicit CountingBackend(Backend& inner) : inner_(inner) {}
  const LlamaConfig& config() const override { return inner_.config(); }
  const KvCacheLayout& kv_layout() const override { return inner_.kv_layout(); }
  ForwardResult forward(const ForwardBatch& batch) override {
    for (const SequenceChunk& chunk : batch.sequences) {
      if (chunk.all_logits) {
        ++all_logits_passes;
        break;
      }
    }
    return inner_.forward(batch);
  }
  std::vector<int32_t> forward_sample_rows(const ForwardBatch& batch,
                                           std::span<const SampleSpec> row_specs) override {
    ++id_passes;
    return inner_.forward_sample_rows(batch, row_specs);
  }
  void fill_kv_cache_random(uint64_t seed) override { inner_.fill_kv_cache_random(seed); }
  int64_t kv_block_host_bytes() const override { return inner_.kv_block_host_bytes(); }
  std::unique_ptr<KvHostCopy> copy_kv_blocks_to_host(std::span<const int32_t> blocks) override {
    return inner_.copy_kv_blocks_to_host(blocks);
  }
  void copy_kv_blocks_from_host(std::span<const int32_t> blocks,
                                std::span<const std::byte> host) override {
    inner_.copy_kv_blocks_from_host(blocks, host);
  }

  int64_t all_logits_passes = 0;  // forward() passes with some chunk's every row to the host
  int64_t id_passes = 0;          // forward_sample_rows passes

 private:
  Backend& inner_;
};

}  // namespace inferlab::engine
