#pragma once
// How the inferlab engine's flash-decode kernel splits its work, written once for the kernel's
// launcher (engine/cuda/attention.cu) and for the predictor that prices it (serve's iteration
// cost): C++17 and CUDA-free, so both can include it.
#include <algorithm>
#include <cstdint>

namespace inferlab {

// A split covers at least this many positions: below it a CTA's fixed costs (query load,
// reductions, writing a partial and the combine reading it) outweigh its reads.
constexpr int64_t kDecodeMinPartition = 64;
// Most splits a decode call uses (the kernels' partial rows per sequence).
constexpr int64_t kDecodeMaxSplits = 256;
// Splits whose partials the combine kernel loads in one trip to memory (attention_decode.cu):
// it folds them a group at a time, each group's loads issued after the previous group's math.
constexpr int64_t kDecodeCombineGroup = 16;

// Dependent trips the combine makes over `splits` partials: one per group of
// kDecodeCombineGroup; 0 for one split (no combine runs).
inline int64_t decode_combine_trips(int64_t splits) {
  return splits > 1 ? (splits + kDecodeCombineGroup - 1) / kDecodeCombineGroup : 0;
}

// The context bound a decode graph is captured for and its splits are planned at: the next
// power of two of at least 256 (a power of two maps to itself).
inline int64_t graph_context_bucket(int64_t max_context_len) {
  int64_t bucket = 256;
  while (bucket < max_context_len) bucket *= 2;
  return bucket;
}

// The most new tokens per sequence a graphed engine pass takes (engine/cuda: decode steps,
// a draft model's catch-up and speculative verification of up to 15 proposals), all sequences
// of the pass having the same count.
constexpr int64_t kGraphMaxQueryTokens = 16;
// A pass whose sequences have at most kGraphMaxQueryTokens new tokens each and this many in all
// runs its attention through the decode kernel token by token (each token a sequence of one
// query over its causal prefix, split-K over the context), not through the tiled kernel, whose
// 64-128-query tiles such passes leave nearly empty.
constexpr int64_t kTokenViewMaxTokens = 64;

// Whether a pass of `tokens` new tokens, at most `max_query_len` per sequence, takes that view.
inline bool attention_by_token(int64_t max_query_len, int64_t tokens) {
  return max_query_len > 1 && max_query_len <= kGraphMaxQueryTokens &&
         tokens <= kTokenViewMaxTokens;
}

// The sequences a graphed pass of `seqs` is captured for: the next power of two, capped at
// `limit` (the engine's max_sequences; 0: none) but never below `seqs`.
inline int64_t graph_padded_sequences(int64_t seqs, int64_t limit) {
  int64_t padded = 1;
  while (padded < seqs) padded *= 2;
  return limit > 0 ? std::max(seqs, std::min(padded, limit)) : padded;
}

// Query heads a decode CTA takes of one KV head's group (1, 2, 4 or 8).
inline int64_t decode_head_tile(int64_t num_heads, int64_t num_kv_heads) {
  const int64_t group = num_heads / num_kv_heads;
  return group == 1 ? 1 : group == 2 ? 2 : group <= 4 ? 4 : 8;
}

struct DecodeSplitPlan {
  int64_t ctas = 0;       // before splitting: sequences x KV heads x head tiles
  int64_t splits = 1;     // each sequence's positions cut into this many CTAs
  int64_t partition = 0;  // positions per split
};

// Splits, from the host-side maxima only (a captured graph replays with the same grid): none
// when the CTAs already give every SM one (each CTA keeps 32-64 KB of copies in flight, enough
// with one per SM for the whole bandwidth); otherwise enough for about two CTAs per SM, each
// split at least kDecodeMinPartition positions and at most `max_splits` (the workspace's rows).
// Planned at the bucket of `max_context_len`, so an eager call and a graph replay of the same
// batch split alike; splits past a sequence's end are empty. Not balanced across sequences of
// unequal length: the longest sequence's CTAs each stream `partition` positions, however few
// positions the others have (the straggler the simulator prices).
inline DecodeSplitPlan decode_split_plan(int64_t decode_seqs, int64_t num_heads,
                                         int64_t num_kv_heads, int64_t sm_count,
                                         int64_t max_context_len, int64_t max_splits) {
  DecodeSplitPlan plan;
  const int64_t tiles = (num_heads / num_kv_heads + decode_head_tile(num_heads, num_kv_heads) - 1) /
                        decode_head_tile(num_heads, num_kv_heads);
  plan.ctas = decode_seqs * num_kv_heads * tiles;
  const int64_t bound = graph_context_bucket(max_context_len);
  const int64_t limit =
      std::min((bound + kDecodeMinPartition - 1) / kDecodeMinPartition, max_splits);
  if (plan.ctas < sm_count && limit > 1) {
    plan.splits = std::min(limit, (2 * sm_count + plan.ctas - 1) / plan.ctas);
  }
  plan.partition = (bound + plan.splits - 1) / plan.splits;
  plan.splits = (bound + plan.partition - 1) / plan.partition;
  return plan;
}

}  // namespace inferlab
