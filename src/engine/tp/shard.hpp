#pragma once
#include <cstdint>

#include "engine/llama_config.hpp"
#include "engine/llama_weights.hpp"
#include "engine/tensor_source.hpp"

namespace inferlab::engine {

// Megatron-style tensor parallelism over `ranks` devices:
//   - column-parallel Q, K, V (rank r holds query heads [r H/N, (r+1) H/N) and the KV heads they
//     read, [r KV/N, (r+1) KV/N)) and gate/up (rows [r I/N, (r+1) I/N));
//   - row-parallel O and down: the matching slices of their input columns; each rank's output is
//     a partial sum, all-reduced before the residual add (two all-reduces per layer);
//   - vocab-parallel LM head: rank r holds vocab rows vocab_shard(vocab, r, N) and the logits are
//     all-gathered;
//   - a mixture of experts: every expert split as the MLP is (its gate/up rows column-parallel,
//     its down columns row-parallel), the router replicated, so that every rank routes each
//     token to the same experts and the weighted sum of the experts' partial outputs is
//     all-reduced once, as the MLP's;
//   - the embedding, norms and the rest replicated.
// Each rank's KV cache holds its KV heads only, under the same block tables.

// Throws InputError naming what does not divide when `config` cannot be split `ranks` ways
// (query heads, KV heads, the MLP's intermediate size; ranks in [1, 64]).
void check_tensor_parallel(const ModelConfig& config, int64_t ranks);

// Rows [begin, begin + count) of a dimension of `size` split `ranks` ways: the first size % ranks
// ranks hold one row more (vocabularies rarely divide: 128256 does by 2 and 4, Qwen's 151936 by
// 2, 4 and 8, a tokenizer with added tokens often not at all).
struct RowRange {
  int64_t begin = 0;
  int64_t count = 0;
};
RowRange shard_rows(int64_t size, int64_t rank, int64_t ranks);

// The config one rank runs: heads, KV heads and intermediate size divided by `ranks`; hidden
// size and vocabulary whole (the embedding is replicated).
LlamaConfig rank_config(const LlamaConfig& config, int64_t ranks);

// Rank `rank`'s weights of a model whose projections are already in their final (quantized and
// dequantized) values; its lm_head holds its vocab rows even when the model ties embeddings.
LlamaWeights shard_weights(const LlamaWeights& weights, const LlamaConfig& config, int64_t rank,
                           int64_t ranks);

// A GPU rank's tensors cut from the whole model's `source` as they load: asked for a tensor of
// rank_config(config, ranks) (the LM head with vocab_shard_rows(vocab, ranks) rows), it reads the
// whole tensor and returns rank `rank`'s part, the same slices as shard_weights; the LM head's
// rows past the rank's shard are zeros (the embedding's rows when the model ties them).
TensorSource sharded_tensor_source(TensorSource source, const LlamaConfig& config, int64_t rank,
                                   int64_t ranks);

// The LM head's rows on every rank of a GPU group: the largest shard, ceil(vocab / ranks), so
// that the all-gather moves equal counts.
int64_t vocab_shard_rows(int64_t vocab, int64_t ranks);

}  // namespace inferlab::engine
