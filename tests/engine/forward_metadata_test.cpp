// The packed batch description the CUDA backend sends to the device, worked out by hand.
#include "engine/forward_metadata.hpp"

#include <gtest/gtest.h>

namespace inferlab::engine {
namespace {

TEST(ForwardMetadata, PacksTwoSequencesWithTheirSlotsAndTables) {
  KvCacheLayout layout{1, 1, 64, /*block_size=*/4, /*num_blocks=*/10};
  ForwardBatch batch;
  // A prefill chunk of 3 tokens after 5 cached ones (positions 5, 6, 7), blocks 7 then 2.
  batch.sequences.push_back({{11, 12, 13}, 5, {7, 2}, /*all_logits=*/true});
  // A decode token at position 0 in block 4.
  batch.sequences.push_back({{21}, 0, {4}, false});
  const ForwardMetadata meta = build_forward_metadata(batch, layout, /*last_only=*/false);
  EXPECT_EQ(meta.token_ids, (std::vector<int32_t>{11, 12, 13, 21}));
  EXPECT_EQ(meta.positions, (std::vector<int32_t>{5, 6, 7, 0}));
  // Position 5 → block 2 (table[1]) slot 2·4 + 1 = 9, 6 → 10, 7 → 11; position 0 → 4·4 = 16.
  EXPECT_EQ(meta.slots, (std::vector<int32_t>{9, 10, 11, 16}));
  EXPECT_EQ(meta.query_start, (std::vector<int32_t>{0, 3, 4}));
  EXPECT_EQ(meta.context_lens, (std::vector<int32_t>{8, 1}));
  EXPECT_EQ(meta.logit_rows, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(meta.first_row, (std::vector<int64_t>{0, 3, 4}));
  EXPECT_EQ(meta.block_table_stride, 2);
  EXPECT_EQ(meta.block_tables, (std::vector<int32_t>{7, 2, 4, 0}));
  EXPECT_EQ(meta.max_query_len, 3);
  EXPECT_EQ(meta.max_context_len, 8);
  // Token by token: contexts 6, 7, 8 of sequence 0, then 1 of sequence 1.
  EXPECT_EQ(meta.token_index, (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(meta.token_context, (std::vector<int32_t>{6, 7, 8, 1}));
  EXPECT_EQ(meta.token_seq, (std::vector<int32_t>{0, 0, 0, 1}));

  const ForwardMetadata last = build_forward_metadata(batch, layout, /*last_only=*/true);
  EXPECT_EQ(last.logit_rows, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(last.first_row, (std::vector<int64_t>{0, 1, 2}));

  const auto packed = meta.packed();
  const auto o = meta.offsets();
  ASSERT_EQ(packed.size(), o.end);
  EXPECT_EQ(packed[o.slots + 3], 16);
  EXPECT_EQ(packed[o.block_tables + 2], 4);
  EXPECT_EQ(packed[o.context_lens], 8);
  EXPECT_EQ(packed[o.token_context + 2], 8);
  EXPECT_EQ(packed[o.token_seq + 3], 1);
  EXPECT_EQ(o.end, o.token_seq + 4);
}

TEST(ForwardMetadata, PadsADecodeBatchToAGraphShape) {
  KvCacheLayout layout{1, 1, 64, /*block_size=*/4, /*num_blocks=*/10};
  ForwardBatch batch;
  batch.sequences.push_back({{7}, 5, {3, 1}, false});  // position 5: block 1, slot 1·4 + 1 = 5
  batch.sequences.push_back({{8}, 0, {6}, false});     // position 0: slot 24
  const auto meta = build_forward_metadata(batch, layout, true);
  // 4 sequences, block tables 3 wide, contexts bounded by 12; scratch block 10 (past the pool).
  const GraphShape shape{4, 1, false, 3, 12};
  const auto padded = pad_to_graph_shape(meta, shape, 10, 4);
  EXPECT_EQ(padded.token_ids, (std::vector<int32_t>{7, 8, 0, 0}));
  EXPECT_EQ(padded.positions, (std::vector<int32_t>{5, 0, 0, 0}));
  EXPECT_EQ(padded.slots, (std::vector<int32_t>{5, 24, 40, 40}));
  EXPECT_EQ(padded.query_start, (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(padded.context_lens, (std::vector<int32_t>{6, 1, 1, 1}));
  EXPECT_EQ(padded.logit_rows, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(padded.block_tables, (std::vector<int32_t>{3, 1, 0, 6, 0, 0, 10, 0, 0, 10, 0, 0}));
  EXPECT_EQ(padded.block_table_stride, 3);
  EXPECT_EQ(padded.max_context_len, 12);
  EXPECT_EQ(padded.single_query_seqs, 4);
  // Every batch of this shape puts each array at the same offset.
  ForwardBatch other;
  other.sequences.push_back({{9}, 9, {2, 4, 5}, false});
  const auto again = pad_to_graph_shape(build_forward_metadata(other, layout, true), shape, 10, 4);
  EXPECT_EQ(again.offsets().block_tables, padded.offsets().block_tables);
  EXPECT_EQ(again.offsets().end, padded.offsets().end);
  EXPECT_THROW(pad_to_graph_shape(meta, {1, 1, false, 3, 12}, 10, 4), std::invalid_argument);
  EXPECT_THROW(pad_to_graph_shape(meta, {4, 1, false, 3, 5}, 10, 4), std::invalid_argument);
  EXPECT_THROW(pad_to_graph_shape(meta, {4, 2, false, 3, 12}, 10, 4), std::invalid_argument);
}

// A speculative verification: 3 new tokens in each of 2 sequences, every row's logits, padded
// to 4 sequences; the padding runs its 3 tokens into slots 0, 1, 2 of the scratch block.
TEST(ForwardMetadata, PadsAVerificationBatchToAGraphShape) {
  KvCacheLayout layout{1, 1, 64, /*block_size=*/4, /*num_blocks=*/10};
  ForwardBatch batch;
  batch.sequences.push_back({{7, 8, 9}, 2, {3, 1}, true});  // positions 2, 3, 4: slots 14, 15, 4
  batch.sequences.push_back({{5, 6, 4}, 0, {6}, true});     // positions 0, 1, 2: slots 24, 25, 26
  const auto meta = build_forward_metadata(batch, layout, /*last_only=*/false);
  ASSERT_EQ(uniform_query_len(meta), 3);
  const GraphShape shape{4, 3, true, 2, 8};
  EXPECT_EQ(shape.tokens(), 12);
  EXPECT_EQ(shape.rows(), 12);
  const auto padded = pad_to_graph_shape(meta, shape, 10, 4);
  EXPECT_EQ(padded.token_ids, (std::vector<int32_t>{7, 8, 9, 5, 6, 4, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(padded.positions, (std::vector<int32_t>{2, 3, 4, 0, 1, 2, 0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(padded.slots, (std::vector<int32_t>{14, 15, 4, 24, 25, 26, 40, 41, 42, 40, 41, 42}));
  EXPECT_EQ(padded.query_start, (std::vector<int32_t>{0, 3, 6, 9, 12}));
  EXPECT_EQ(padded.context_lens, (std::vector<int32_t>{5, 3, 3, 3}));
  EXPECT_EQ(padded.logit_rows, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(padded.first_row, (std::vector<int64_t>{0, 3, 6, 9, 12}));
  EXPECT_EQ(padded.block_tables, (std::vector<int32_t>{3, 1, 6, 0, 10, 0, 10, 0}));
  EXPECT_EQ(padded.max_query_len, 3);
  EXPECT_EQ(padded.max_context_len, 8);
  EXPECT_EQ(padded.single_query_seqs, 0);
  EXPECT_EQ(padded.token_index, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(padded.token_context, (std::vector<int32_t>{3, 4, 5, 1, 2, 3, 1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(padded.token_seq, (std::vector<int32_t>{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3}));

  // The draft model's first pass of a round: 2 new tokens, the last one's logits only.
  ForwardBatch draft;
  draft.sequences.push_back({{7, 8}, 2, {3}, false});
  const auto last =
      pad_to_graph_shape(build_forward_metadata(draft, layout, true), {2, 2, false, 1, 4}, 10, 4);
  EXPECT_EQ(last.logit_rows, (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(last.first_row, (std::vector<int64_t>{0, 1, 2}));

  // Sequences of different lengths, or a shape asking for every row of a last-row batch, or
  // more tokens than a block holds, are not this shape.
  ForwardBatch ragged = batch;
  ragged.sequences[1].tokens.pop_back();
  EXPECT_EQ(uniform_query_len(build_forward_metadata(ragged, layout, false)), 0);
  EXPECT_THROW(pad_to_graph_shape(build_forward_metadata(ragged, layout, false), shape, 10, 4),
               std::invalid_argument);
  EXPECT_THROW(pad_to_graph_shape(build_forward_metadata(batch, layout, true), shape, 10, 4),
               std::invalid_argument);
  ForwardBatch long_query;
  long_query.sequences.push_back({{1, 2, 3, 4, 5}, 0, {2, 5}, true});
  EXPECT_THROW(pad_to_graph_shape(build_forward_metadata(long_query, layout, false),
                                  {1, 5, true, 2, 8}, 10, 4),
               std::invalid_argument);
}

}  // namespace
}  // namespace inferlab::engine
