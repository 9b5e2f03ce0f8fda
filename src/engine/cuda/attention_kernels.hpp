#pragma once
// Launchers shared by attention.cu (dispatch, workspace) and the kernel files; internal to the
// CUDA backend. C++17 (included by .cu files).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "engine/attention_head_dims.hpp"
#include "engine/cuda/attention.hpp"
#include "model/engine_decode_plan.hpp"

namespace inferlab::engine::cuda::detail {

// Calls f(std::integral_constant<int, D>{}) for D = head_dim, one of the supported head sizes
// (64, 128, 192, 256: engine/attention_head_dims.hpp), so that each launcher instantiates its
// kernels once per size; throws std::invalid_argument for any other.
template <typename Launch>
void with_head_dim(int head_dim, Launch&& launch) {
  switch (head_dim) {
    case 64:
      return launch(std::integral_constant<int, 64>{});
    case 128:
      return launch(std::integral_constant<int, 128>{});
    case 192:
      return launch(std::integral_constant<int, 192>{});
    case 256:
      return launch(std::integral_constant<int, 256>{});
    default:
      throw std::invalid_argument("paged_attention: " + attention_head_dim_problem(head_dim));
  }
}

// Split-K decode over the sequences with one new token (the others are passed over). Each of
// `num_splits` splits covers `partition` positions of the context; with one split the kernel
// writes `out` directly, otherwise partials go to `workspace` (rows indexed by sequence, laid out
// in attention_decode.cu) and a combine kernel writes `out`. `streamed`: the split kernel whose
// warps stream their own rows (attention_decode_stream.cu, for large batches) instead of the
// chunked one (attention_decode.cu, for small ones). `programmatic`: launch both kernels with
// programmatic dependent launch (Hopper; see attention_device.cuh), so that each one's launch
// and CTA start-up overlap the previous kernel's tail.
void launch_decode(const PagedAttentionParams& p, int num_splits, int partition, bool streamed,
                   bool programmatic, cudaStream_t stream);

// Most splits a decode call uses.
constexpr int kMaxSplits = static_cast<int>(kDecodeMaxSplits);

// Bytes of split-K partials per (sequence, split) row: a normalized fp32 output per head and its
// (max, sum) pair, both in the log2 domain.
inline size_t decode_row_bytes(int num_heads, int head_dim) {
  return static_cast<size_t>(num_heads) *
         (static_cast<size_t>(head_dim) * sizeof(float) + 2 * sizeof(float));
}

// Tiled causal attention (query tiles × key tiles, tensor cores) for prefill and mixed batches.
void launch_prefill(const PagedAttentionParams& p, int sm_count, cudaStream_t stream);

// The unfused baseline: scores of every query token against its visible context into the
// workspace (fp32), a softmax over each row, then P·V; the tokens in chunks of
// workspace_bytes / naive_token_bytes(...) (at least one, checked by the caller).
void launch_naive(const PagedAttentionParams& p, cudaStream_t stream);

// Workspace bytes the naive path needs per query token: one fp32 score row per head, as long as
// the longest context (rounded up to 4 floats, so rows stay 16-byte aligned).
inline size_t naive_token_bytes(int num_heads, int max_context_len) {
  const size_t row = (static_cast<size_t>(max_context_len) + 3) / 4 * 4;
  return static_cast<size_t>(num_heads) * row * sizeof(float);
}

}  // namespace inferlab::engine::cuda::detail
