#include "engine/forward_metadata.hpp"

#include <algorithm>
#include <stdexcept>

namespace inferlab::engine {

ForwardMetadata build_forward_metadata(const ForwardBatch& batch, const KvCacheLayout& layout,
                                       bool last_only) {
  ForwardMetadata meta;
  meta.query_start.push_back(0);
  meta.first_row.push_back(0);
  for (const SequenceChunk& chunk : batch.sequences) {
    const auto count = static_cast<int64_t>(chunk.tokens.size());
    const int64_t context = chunk.cached_tokens + count;
    const auto first_token = static_cast<int32_t>(meta.token_ids.size());
    const auto slots =
        slot_mapping(chunk.block_table, layout.block_size, chunk.cached_tokens, count);
    const auto sequence = static_cast<int32_t>(meta.context_lens.size());
    for (int64_t j = 0; j < count; ++j) {
      meta.token_ids.push_back(chunk.tokens[static_cast<size_t>(j)]);
      meta.positions.push_back(static_cast<int32_t>(chunk.cached_tokens + j));
      meta.slots.push_back(static_cast<int32_t>(slots[static_cast<size_t>(j)]));
      meta.token_index.push_back(static_cast<int32_t>(meta.token_index.size()));
      meta.token_context.push_back(static_cast<int32_t>(chunk.cached_tokens + j + 1));
      meta.token_seq.push_back(sequence);
    }
    const bool all = chunk.all_logits && !last_only;
    for (int64_t j = all ? 0 : count - 1; j < count; ++j) {
      meta.logit_rows.push_back(first_token + static_cast<int32_t>(j));
    }
    meta.first_row.push_back(static_cast<int64_t>(meta.logit_rows.size()));
    meta.query_start.push_back(static_cast<int32_t>(meta.token_ids.size()));
    meta.context_lens.push_back(static_cast<int32_t>(context));
    meta.max_query_len = std::max(meta.max_query_len, static_cast<int32_t>(count));
    if (count == 1) ++meta.single_query_seqs;
    meta.max_context_len = std::max(meta.max_context_len, static_cast<int32_t>(context));
    meta.block_table_stride =
        std::max(meta.block_table_stride, static_cast<int32_t>(layout.blocks_for(context)));
  }
  meta.token_index.push_back(static_cast<int32_t>(meta.token_index.size()));
  const size_t stride = static_cast<size_t>(meta.block_table_stride);
  meta.block_tables.assign(batch.sequences.size() * stride, 0);
  for (size_t s = 0; s < batch.sequences.size(); ++s) {
    const auto& table = batch.sequences[s].block_table;
    const size_t used = std::min(stride, table.size());
    std::copy_n(table.begin(), used,
                meta.block_tables.begin() + static_cast<ptrdiff_t>(s * stride));
  }
  return meta;
}

ForwardMetadata::Offsets ForwardMetadata::offsets() const {
  Offsets o{};
  o.token_ids = 0;
  o.positions = o.token_ids + token_ids.size();
  o.slots = o.positions + positions.size();
  o.query_start = o.slots + slots.size();
  o.context_lens = o.query_start + query_start.size();
  o.logit_rows = o.context_lens + context_lens.size();
  o.block_tables = o.logit_rows + logit_rows.size();
  o.token_index = o.block_tables + block_tables.size();
  o.token_context = o.token_index + token_index.size();
  o.token_seq = o.token_context + token_context.size();
  o.end = o.token_seq + token_seq.size();
  return o;
}

std::vector<int32_t> ForwardMetadata::packed() const {
  std::vector<int32_t> all;
  all.reserve(offsets().end);
  for (const auto* part : {&token_ids, &positions, &slots, &query_start, &context_lens, &logit_rows,
                           &block_tables, &token_index, &token_context, &token_seq}) {
    all.insert(all.end(), part->begin(), part->end());
  }
  return all;
}

int32_t uniform_query_len(const ForwardMetadata& meta) {
  if (meta.sequences() == 0) return 0;
  const int32_t first = meta.query_start[1] - meta.query_start[0];
  for (int32_t s = 1; s < meta.sequences(); ++s) {
    if (meta.query_start[s + 1] - meta.query_start[s] != first) return 0;
  }
  return first;
}

ForwardMetadata pad_to_graph_shape(const ForwardMetadata& meta, const GraphShape& shape,
                                   int32_t scratch_block, int64_t block_size) {
  const int32_t real = meta.sequences();
  const int32_t q = shape.query_len;
  const int32_t rows_per_sequence = shape.all_rows ? q : 1;
  if (q < 1 || q > block_size || uniform_query_len(meta) != q ||
      static_cast<int32_t>(meta.logit_rows.size()) != real * rows_per_sequence) {
    throw std::invalid_argument("pad_to_graph_shape: the batch is not of the shape's kind");
  }
  if (real > shape.padded || meta.block_table_stride > shape.stride ||
      meta.max_context_len > shape.context_bound) {
    throw std::invalid_argument("pad_to_graph_shape: the batch is larger than the shape");
  }
  ForwardMetadata out = meta;
  out.token_index.pop_back();  // the end, pushed again past the padding
  const auto scratch_slot = static_cast<int32_t>(scratch_block * block_size);
  for (int32_t s = real; s < shape.padded; ++s) {
    const int32_t first_token = s * q;
    for (int32_t j = 0; j < q; ++j) {
      out.token_ids.push_back(0);
      out.positions.push_back(j);
      out.slots.push_back(scratch_slot + j);
      out.token_index.push_back(first_token + j);
      out.token_context.push_back(j + 1);
      out.token_seq.push_back(s);
    }
    for (int32_t j = q - rows_per_sequence; j < q; ++j) out.logit_rows.push_back(first_token + j);
    out.query_start.push_back(first_token + q);
    out.context_lens.push_back(q);
    out.first_row.push_back(static_cast<int64_t>(out.logit_rows.size()));
  }
  out.token_index.push_back(shape.tokens());
  out.block_tables.assign(static_cast<size_t>(shape.padded) * static_cast<size_t>(shape.stride), 0);
  for (int32_t s = 0; s < shape.padded; ++s) {
    auto row = out.block_tables.begin() + static_cast<ptrdiff_t>(s) * shape.stride;
    if (s < real) {
      const auto from =
          meta.block_tables.begin() + static_cast<ptrdiff_t>(s) * meta.block_table_stride;
      std::copy(from, from + meta.block_table_stride, row);
    } else {
      *row = scratch_block;
    }
  }
  out.block_table_stride = shape.stride;
  out.max_query_len = q;
  out.max_context_len = shape.context_bound;
  out.single_query_seqs = q == 1 ? shape.padded : 0;
  return out;
}

}  // namespace inferlab::engine
