#pragma once
// A backend that passes everything to another and counts how its passes brought logits back:
// forward() with some chunk asking for every row's logits (to the host), or forward_sample_rows
// (ids only). Tests of the verify passes check which one greedy and sampled verdicts take.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/backend.hpp"
#include "forwarding_backend.hpp"

namespace inferlab::engine {

class CountingBackend final : public ForwardingBackend {
 public:
  explicit CountingBackend(Backend& inner) : ForwardingBackend(inner) {}
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

  int64_t all_logits_passes = 0;  // forward() passes with some chunk's every row to the host
  int64_t id_passes = 0;          // forward_sample_rows passes
};

}  // namespace inferlab::engine
