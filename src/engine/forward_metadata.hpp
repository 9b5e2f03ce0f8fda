#pragma once
#include <cstdint>
#include <tuple>
#include <vector>

#include "engine/backend.hpp"

namespace inferlab::engine {

// What a GPU forward pass needs to know about a batch, flattened into int32 arrays that go to
// the device in one copy (plain C++, so it is tested without a GPU). Tokens of all sequences are
// packed in order; sequence s owns tokens [query_start[s], query_start[s + 1]).
struct ForwardMetadata {
  std::vector<int32_t> token_ids;     // [tokens]
  std::vector<int32_t> positions;     // [tokens]: cached_tokens + j
  std::vector<int32_t> slots;         // [tokens]: KV cache slot of each new token
  std::vector<int32_t> query_start;   // [sequences + 1]
  std::vector<int32_t> context_lens;  // [sequences]: cached + new tokens
  std::vector<int32_t> logit_rows;    // packed token indices whose logits are wanted, in order
  std::vector<int32_t> block_tables;  // [sequences, block_table_stride], padded with 0
  int32_t block_table_stride = 0;     // the longest block table needed (blocks_for(context))
  int32_t max_query_len = 0;
  int32_t max_context_len = 0;
  int32_t single_query_seqs = 0;   // sequences with one new token
  std::vector<int64_t> first_row;  // ForwardResult::first_row for these logit rows
  // The batch seen token by token, each token a sequence of one query attending its causal
  // prefix (the decode kernel's view of a pass of few tokens per sequence: speculative
  // verification): its index as query_start ([tokens + 1]: 0, 1, ..), its context (position + 1)
  // and the sequence whose block table it reads.
  std::vector<int32_t> token_index;    // [tokens + 1]
  std::vector<int32_t> token_context;  // [tokens]
  std::vector<int32_t> token_seq;      // [tokens]

  int32_t tokens() const { return static_cast<int32_t>(token_ids.size()); }
  int32_t sequences() const { return static_cast<int32_t>(context_lens.size()); }
  // Every array above, one after another (the order of offsets()), for one host→device copy.
  std::vector<int32_t> packed() const;
  struct Offsets {
    size_t token_ids, positions, slots, query_start, context_lens, logit_rows, block_tables,
        token_index, token_context, token_seq, end;
  };
  Offsets offsets() const;
};

// The batch's metadata. `last_only` asks for one logit row per sequence (its last token) even
// where a chunk asks for all (forward_sample). The batch must already be validated.
ForwardMetadata build_forward_metadata(const ForwardBatch& batch, const KvCacheLayout& layout,
                                       bool last_only);

// The shape a captured CUDA graph replays: `padded` sequences of `query_len` new tokens each,
// every token's logits (`all_rows`: speculative verification) or each sequence's last, block
// tables `stride` wide and max_context_len `context_bound`. Every batch of one shape puts each
// metadata array at the same offset and gives every launch the same grid.
struct GraphShape {
  int32_t padded = 1;
  int32_t query_len = 1;
  bool all_rows = false;
  int32_t stride = 1;
  int32_t context_bound = 1;
  auto key() const { return std::tuple(padded, query_len, all_rows, context_bound); }
  int32_t tokens() const { return padded * query_len; }
  int32_t rows() const { return all_rows ? tokens() : padded; }
};

// The new tokens per sequence when every sequence of the batch has the same number (0 when
// they differ or the batch is empty).
int32_t uniform_query_len(const ForwardMetadata& meta);

// A batch whose sequences all have shape.query_len new tokens, with logit rows as
// shape.all_rows says (build_forward_metadata's last_only = !all_rows), reshaped to `shape`: the
// real sequences first, then padding sequences that run tokens 0 at positions 0.. into slots 0..
// of `scratch_block` (a block past the pool, never read by a real sequence). Throws
// std::invalid_argument when the batch does not fit the shape.
ForwardMetadata pad_to_graph_shape(const ForwardMetadata& meta, const GraphShape& shape,
                                   int32_t scratch_block, int64_t block_size);

}  // namespace inferlab::engine
