#include "engine/backend.hpp"

#include <stdexcept>
#include <string>

#include "util/error.hpp"

namespace inferlab::engine {

void validate_batch(const ForwardBatch& batch, const LlamaConfig& config,
                    const KvCacheLayout& layout) {
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    const SequenceChunk& chunk = batch.sequences[i];
    const std::string where = "forward: sequence " + std::to_string(i);
    if (chunk.tokens.empty()) throw std::invalid_argument(where + " has no new tokens");
    if (chunk.cached_tokens < 0) throw std::invalid_argument(where + ": negative cached_tokens");
    for (int32_t token : chunk.tokens) {
      if (token < 0 || token >= config.model.vocab_size) {
        throw InputError("token id " + std::to_string(token) + " is outside the vocabulary (0 to " +
                         std::to_string(config.model.vocab_size - 1) + ")");
      }
    }
    const int64_t end = chunk.cached_tokens + static_cast<int64_t>(chunk.tokens.size());
    // Positions past the context have no trained rotary angle and no decode-graph bucket; the
    // callers refuse such requests (max_model_len), and a backend never runs one.
    const int64_t context = config.model.max_position_embeddings;
    if (context > 0 && end > context) {
      throw InputError(where + " would run positions up to " + std::to_string(end - 1) +
                       ", past the model's context of " + std::to_string(context) +
                       " tokens (positions 0 to " + std::to_string(context - 1) + ")");
    }
    if (static_cast<int64_t>(chunk.block_table.size()) < layout.blocks_for(end)) {
      throw std::invalid_argument(where + ": the block table (" +
                                  std::to_string(chunk.block_table.size()) +
                                  " blocks) does not cover " + std::to_string(end) + " positions");
    }
    for (int32_t block : chunk.block_table) {
      if (block < 0 || block >= layout.num_blocks) {
        throw std::invalid_argument(where + ": block " + std::to_string(block) +
                                    " is outside the pool of " + std::to_string(layout.num_blocks));
      }
    }
  }
}

namespace {
// The token `spec` picks from one row of logits on the host (the GPU sampler's reference).
int32_t pick_from_row(std::span<const float> logits, const SampleSpec& spec) {
  return sampling_draws(spec.params)
             ? pick_token(sampling_distribution(logits, spec.params), spec.uniform)
             : argmax(logits);
}
}  // namespace

int64_t logit_rows(const ForwardBatch& batch) {
  int64_t rows = 0;
  for (const SequenceChunk& chunk : batch.sequences) {
    rows += chunk.all_logits ? static_cast<int64_t>(chunk.tokens.size()) : 1;
  }
  return rows;
}

void check_row_specs(const ForwardBatch& batch, std::span<const SampleSpec> row_specs) {
  const int64_t rows = logit_rows(batch);
  if (static_cast<int64_t>(row_specs.size()) != rows) {
    throw std::invalid_argument("forward_sample_rows: one SampleSpec per logit row is needed (" +
                                std::to_string(rows) + " rows, " +
                                std::to_string(row_specs.size()) + " specs)");
  }
}

std::vector<int32_t> Backend::forward_sample(const ForwardBatch& batch,
                                             std::span<const SampleSpec> specs) {
  if (specs.size() != batch.sequences.size()) {
    throw std::invalid_argument("forward_sample: one SampleSpec per sequence is needed");
  }
  const ForwardResult result = forward(batch);
  std::vector<int32_t> ids;
  for (size_t i = 0; i < specs.size(); ++i) ids.push_back(pick_from_row(result.last(i), specs[i]));
  return ids;
}

std::vector<int32_t> Backend::forward_sample_rows(const ForwardBatch& batch,
                                                  std::span<const SampleSpec> row_specs) {
  check_row_specs(batch, row_specs);
  const ForwardResult result = forward(batch);
  std::vector<int32_t> ids;
  for (size_t r = 0; r < row_specs.size(); ++r) {
    ids.push_back(pick_from_row(result.row(static_cast<int64_t>(r)), row_specs[r]));
  }
  return ids;
}

std::vector<int32_t> Backend::forward_argmax_rows(const ForwardBatch& batch) {
  const std::vector<SampleSpec> greedy(static_cast<size_t>(logit_rows(batch)));
  return forward_sample_rows(batch, greedy);
}

void check_swap_blocks(std::span<const int32_t> blocks, const KvCacheLayout& layout,
                       int64_t host_bytes, int64_t block_bytes) {
  for (const int32_t block : blocks) {
    if (block < 0 || block >= layout.num_blocks) {
      throw std::invalid_argument("KV swap: block " + std::to_string(block) +
                                  " is outside the pool of " + std::to_string(layout.num_blocks));
    }
  }
  if (host_bytes >= 0 && host_bytes < static_cast<int64_t>(blocks.size()) * block_bytes) {
    throw std::invalid_argument("KV swap: the host copy holds fewer blocks than asked back");
  }
}

std::vector<std::span<const std::byte>> rank_parts_of_host_copy(
    std::span<const std::byte> host, const std::vector<int64_t>& rank_block_bytes) {
  int64_t group_block_bytes = 0;
  for (int64_t bytes : rank_block_bytes) group_block_bytes += bytes;
  const size_t copied_blocks = host.size() / static_cast<size_t>(group_block_bytes);
  std::vector<std::span<const std::byte>> parts;
  size_t offset = 0;
  for (int64_t bytes : rank_block_bytes) {
    const size_t part = copied_blocks * static_cast<size_t>(bytes);
    parts.push_back(host.subspan(offset, part));
    offset += part;
  }
  return parts;
}

}  // namespace inferlab::engine
