// paged_attention: argument checks, the decode/prefill choice and the split-K sizing. The
// kernels are in attention_decode.cu and attention_prefill.cu.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/cuda/attention.hpp"
#include "engine/cuda/attention_kernels.hpp"
#include "engine/cuda/cuda_check.hpp"

namespace inferlab::engine::cuda {
namespace {

// A split covers at least this many positions: below it the CTA's fixed costs (query load,
// reductions, writing a partial) outweigh its reads.
constexpr int64_t kMinPartition = 64;
// (token, split) rows of partials the workspace holds at least: enough for a few sequences to
// be split over every SM (8 KV heads × 32 splits × 4 sequences = 1024 CTAs).
constexpr int64_t kSplitRowBudget = 1024;
constexpr int kMaxDevices = 64;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Rows of partials for `tokens` decode tokens: none when a context never needs splitting;
// monotone in both arguments, so a workspace sized for the maxima serves every smaller call.
int64_t split_rows(int64_t tokens, int64_t max_context_len) {
  const int64_t max_splits = ceil_div(max_context_len, kMinPartition);
  if (max_splits <= 1) return 0;
  return std::min(std::max(tokens, kSplitRowBudget), tokens * max_splits);
}

// Multiprocessors of the current device, asked once per device (no synchronisation, so also
// safe while a graph is being captured).
int sm_count() {
  static std::atomic<int> cached[kMaxDevices] = {};
  int device = 0;
  INFERLAB_CUDA_CHECK(cudaGetDevice(&device));
  if (device >= 0 && device < kMaxDevices && cached[device].load() > 0) return cached[device];
  int count = 0;
  INFERLAB_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  if (device >= 0 && device < kMaxDevices) cached[device].store(count);
  return count;
}

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("paged_attention: " + what);
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

void check(const PagedAttentionParams& p) {
  require(p.head_dim == 64 || p.head_dim == 128,
          "head_dim must be 64 or 128, not " + std::to_string(p.head_dim));
  require(p.num_heads > 0 && p.num_kv_heads > 0 && p.num_heads % p.num_kv_heads == 0,
          "num_heads must be a positive multiple of num_kv_heads");
  require(p.block_size > 0, "block_size must be positive");
  require(p.sliding_window >= 0, "sliding_window must not be negative");
  require(p.num_seqs >= 0 && p.num_tokens >= 0, "negative num_seqs or num_tokens");
  if (p.num_seqs == 0 || p.num_tokens == 0) return;
  require(p.max_query_len >= 1 && p.max_context_len >= p.max_query_len,
          "max_query_len must be at least 1 and at most max_context_len");
  require(p.q != nullptr && p.cache.k != nullptr && p.cache.v != nullptr &&
              p.block_tables != nullptr && p.query_start != nullptr && p.context_lens != nullptr &&
              p.out != nullptr,
          "a null tensor");
  // The kernels read queries and cache rows 16 bytes at a time.
  require(
      p.q_row_stride >= static_cast<int64_t>(p.num_heads) * p.head_dim && p.q_row_stride % 8 == 0,
      "q_row_stride must hold num_heads * head_dim and be a multiple of 8");
  require(aligned16(p.q) && aligned16(p.cache.k) && aligned16(p.cache.v) && aligned16(p.out),
          "q, caches and out must be 16-byte aligned");
}

}  // namespace

size_t paged_attention_workspace_bytes(int max_tokens, int num_heads, int head_dim,
                                       int max_context_len, bool /*naive*/) {
  const int64_t rows = split_rows(max_tokens, max_context_len);
  return static_cast<size_t>(rows) * detail::decode_row_bytes(num_heads, head_dim);
}

namespace {

// The decode kernel over the sequences with one new token (`decode_seqs` of them; in a mixed
// batch the kernel passes over the others). Splits, from the host-side maxima only (a captured
// graph replays with the same grid): none when the CTAs already fill 80% of the GPU's resident
// slots; otherwise FlashAttention-2's rule, the fewest splits whose wave efficiency (work over
// whole waves of resident CTAs) is within 85% of the best, each split at least kMinPartition
// positions and all of them in the workspace (whose rows are indexed by token).
void launch_decode_path(const PagedAttentionParams& p, int64_t decode_seqs, cudaStream_t stream) {
  const int64_t group = p.num_heads / p.num_kv_heads;
  const int64_t head_tile = group == 1 ? 1 : group == 2 ? 2 : group <= 4 ? 4 : 8;
  const int64_t ctas = decode_seqs * p.num_kv_heads * ceil_div(group, head_tile);
  const int64_t slots =
      int64_t{sm_count()} * detail::decode_ctas_per_sm(p.head_dim, static_cast<int>(group));
  const int64_t capacity =
      static_cast<int64_t>(p.workspace_bytes / detail::decode_row_bytes(p.num_heads, p.head_dim));
  const int64_t max_splits = std::min({ceil_div(p.max_context_len, kMinPartition),
                                       capacity / p.num_tokens, int64_t{detail::kMaxSplits}});
  int64_t splits = 1;
  if (static_cast<double>(ctas) < 0.8 * static_cast<double>(slots) && max_splits > 1) {
    auto efficiency = [&](int64_t n) {
      const double waves = static_cast<double>(ctas * n) / static_cast<double>(slots);
      return waves / std::ceil(waves);
    };
    double best = 0;
    for (int64_t n = 1; n <= max_splits; ++n) best = std::max(best, efficiency(n));
    while (efficiency(splits) < 0.85 * best) ++splits;
  }
  const int64_t partition = ceil_div(p.max_context_len, splits);
  splits = ceil_div(p.max_context_len, partition);
  detail::launch_decode(p, static_cast<int>(splits), static_cast<int>(partition), stream);
}

}  // namespace

void paged_attention(const PagedAttentionParams& p, cudaStream_t stream) {
  check(p);
  require(p.cache.format == DType::bf16 && !p.naive, "only the bf16 flash path is built yet");
  if (p.num_seqs == 0 || p.num_tokens == 0) return;
  if (p.max_query_len > 1) {
    if (p.single_query_seqs <= 0) {
      detail::launch_prefill(p, sm_count(), stream);
      return;
    }
    PagedAttentionParams tiled = p;
    tiled.skip_single_queries = true;
    detail::launch_prefill(tiled, sm_count(), stream);
    launch_decode_path(p, p.single_query_seqs, stream);
    return;
  }
  const size_t needed =
      paged_attention_workspace_bytes(p.num_tokens, p.num_heads, p.head_dim, p.max_context_len);
  require(p.workspace_bytes >= needed && (needed == 0 || p.workspace != nullptr),
          "workspace of " + std::to_string(p.workspace_bytes) + " bytes, " +
              std::to_string(needed) + " needed");
  require(needed == 0 || aligned16(p.workspace), "workspace must be 16-byte aligned");
  launch_decode_path(p, p.num_seqs, stream);
}

}  // namespace inferlab::engine::cuda
