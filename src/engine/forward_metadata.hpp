#pragma once
#include <cstdint>
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

  int32_t tokens() const { return static_cast<int32_t>(token_ids.size()); }
  int32_t sequences() const { return static_cast<int32_t>(context_lens.size()); }
  // Every array above, one after another (the order of offsets()), for one host→device copy.
  std::vector<int32_t> packed() const;
  struct Offsets {
    size_t token_ids, positions, slots, query_start, context_lens, logit_rows, block_tables, end;
  };
  Offsets offsets() const;
};

// The batch's metadata. `last_only` asks for one logit row per sequence (its last token) even
// where a chunk asks for all (forward_sample). The batch must already be validated.
ForwardMetadata build_forward_metadata(const ForwardBatch& batch, const KvCacheLayout& layout,
                                       bool last_only);

// A decode-only batch (one new token per sequence, last-token logits) reshaped for a captured
// CUDA graph: `padded` sequences (the real ones first, then padding that decodes token 0 at
// position 0 into slot 0 of `scratch_block`), block tables `stride` wide and max_context_len
// `context_bound`, so that every array sits at the same offset and every launch has the same
// shape for all batches of this (padded, context_bound). Throws std::invalid_argument when the
// batch does not fit that shape.
ForwardMetadata pad_decode_metadata(const ForwardMetadata& meta, int32_t padded, int32_t stride,
                                    int32_t context_bound, int32_t scratch_block,
                                    int64_t block_size);

}  // namespace inferlab::engine
