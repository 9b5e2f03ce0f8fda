#include "engine/teacher_forced.hpp"

#include <utility>

namespace inferlab::engine {

std::vector<float> teacher_forced_logits(Backend& backend, std::span<const int32_t> ids,
                                         int64_t prefill, BlockTable block_table) {
  const auto count = static_cast<int64_t>(ids.size());
  ForwardBatch batch;
  batch.sequences.resize(1);
  SequenceChunk& chunk = batch.sequences[0];
  chunk.block_table = std::move(block_table);
  chunk.tokens.assign(ids.begin(), ids.begin() + prefill);
  chunk.all_logits = true;
  std::vector<float> logits;
  logits.reserve(static_cast<size_t>(count * backend.config().model.vocab_size));
  auto append = [&](const ForwardResult& result) {
    logits.insert(logits.end(), result.logits.begin(), result.logits.end());
  };
  append(backend.forward(batch));
  for (int64_t t = prefill; t < count; ++t) {
    chunk.cached_tokens = t;
    chunk.tokens.assign(1, ids[static_cast<size_t>(t)]);
    append(backend.forward(batch));
  }
  return logits;
}

}  // namespace inferlab::engine
