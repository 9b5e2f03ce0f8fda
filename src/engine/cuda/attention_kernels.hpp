#pragma once
// Launchers shared by attention.cu (dispatch, workspace) and the two kernel files; internal to
// the CUDA backend. C++17 (included by .cu files).
#include <cuda_runtime.h>

#include "engine/cuda/attention.hpp"

namespace inferlab::engine::cuda::detail {

// Split-K decode (every sequence has at most one new token). Each of `num_splits` splits covers
// `partition` positions of the context; with one split the kernel writes `out` directly,
// otherwise partials go to `workspace` (laid out by decode_partials below) and a combine kernel
// writes `out`.
void launch_decode(const PagedAttentionParams& p, int num_splits, int partition,
                   cudaStream_t stream);

// Most splits a decode call uses (the combine kernel keeps one weight per split in shared
// memory).
constexpr int kMaxSplits = 256;

// Decode CTAs (for this head_dim and group size) resident on one SM at once.
int decode_ctas_per_sm(int head_dim, int group);

// Tiled causal attention (query tiles × key tiles, tensor cores) for prefill and mixed batches.
void launch_prefill(const PagedAttentionParams& p, int sm_count, cudaStream_t stream);

// Bytes of split-K partials per (token, split) row: a normalized fp32 output per head and its
// (max, sum) pair, both in the log2 domain.
inline size_t decode_row_bytes(int num_heads, int head_dim) {
  return static_cast<size_t>(num_heads) *
         (static_cast<size_t>(head_dim) * sizeof(float) + 2 * sizeof(float));
}

}  // namespace inferlab::engine::cuda::detail
