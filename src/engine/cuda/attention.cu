// paged_attention: argument checks, the choice among the decode, tiled and naive paths, the
// split-K sizing and the workspace. The kernels are in attention_decode.cu, attention_prefill.cu
// and attention_naive.cu.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "engine/attention_head_dims.hpp"
#include "engine/cuda/attention.hpp"
#include "engine/cuda/attention_hopper.hpp"
#include "engine/cuda/attention_kernels.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/device_facts.hpp"
#include "model/engine_decode_plan.hpp"

namespace inferlab::engine::cuda {
namespace {

constexpr int64_t kMinPartition = kDecodeMinPartition;
// (token, split) rows of partials the workspace holds at least: enough for a few sequences to
// be split over every SM (8 KV heads × 32 splits × 4 sequences = 1024 CTAs).
constexpr int64_t kSplitRowBudget = 1024;
// The naive path's score rows take at most this much workspace (or one token's rows, if more);
// longer batches run in chunks of tokens.
constexpr size_t kNaiveWorkspaceCap = size_t{256} << 20;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Rows of partials for `tokens` decode tokens: none when a context never needs splitting;
// monotone in both arguments, so a workspace sized for the maxima serves every smaller call.
int64_t split_rows(int64_t tokens, int64_t max_context_len) {
  const int64_t max_splits = ceil_div(graph_context_bucket(max_context_len), kMinPartition);
  if (max_splits <= 1) return 0;
  return std::min(std::max(tokens, kSplitRowBudget), tokens * max_splits);
}

int sm_count() {
  return current_device_facts().sm_count;
}

// The tiled prefill: the Hopper kernel (wgmma + TMA) where it runs the batch, unless
// p.hopper_prefill is false (A/B without rebuilding); else the mma.sync kernel.
void launch_tiled_prefill(const PagedAttentionParams& p, cudaStream_t stream) {
  const DeviceFacts facts = current_device_facts();
  // Hopper parts are all 9.0 (the predicate wants major·10 + minor).
  if (p.hopper_prefill && detail::hopper_prefill_supported(p, facts.major * 10)) {
    detail::launch_prefill_hopper(p, facts.sm_count, stream);
    return;
  }
  detail::launch_prefill(p, facts.sm_count, stream);
}

// Programmatic dependent launch for the decode kernels: on Hopper and later, unless
// p.programmatic_launch is false (A/B on a GPU without rebuilding).
bool programmatic_launch(const PagedAttentionParams& p) {
  return p.programmatic_launch && current_device_facts().major >= 9;
}

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("paged_attention: " + what);
}

bool aligned(const void* p, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

void check(const PagedAttentionParams& p) {
  if (!attention_head_dim_supported(p.head_dim)) {
    throw std::invalid_argument("paged_attention: " + attention_head_dim_problem(p.head_dim));
  }
  require(p.num_heads > 0 && p.num_kv_heads > 0 && p.num_heads % p.num_kv_heads == 0,
          "num_heads must be a positive multiple of num_kv_heads");
  require(p.block_size > 0, "block_size must be positive");
  require(p.sliding_window >= 0, "sliding_window must not be negative");
  require(p.num_seqs >= 0 && p.num_tokens >= 0, "negative num_seqs or num_tokens");
  const DType f = p.cache.format;
  require(f == DType::bf16 || f == DType::int8 || f == DType::fp8,
          "the cache must be bf16, int8 or fp8, not " + std::string(dtype_name(f)));
  if (p.num_seqs == 0 || p.num_tokens == 0) return;
  require(p.max_query_len >= 1 && p.max_context_len >= p.max_query_len,
          "max_query_len must be at least 1 and at most max_context_len");
  require(p.q != nullptr && p.cache.k != nullptr && p.cache.v != nullptr &&
              p.block_tables != nullptr && p.query_start != nullptr && p.context_lens != nullptr &&
              p.out != nullptr,
          "a null tensor");
  require(p.block_table_stride > 0, "block_table_stride must be positive");
  require(p.table_rows == nullptr || (p.max_query_len == 1 && !p.naive),
          "table_rows is for the decode path (max_query_len 1, not naive)");
  // The kernels read queries and cache rows 16 bytes at a time (a row is head_dim elements: a
  // multiple of 64, so 64 or more bytes in every format).
  require(
      p.q_row_stride >= static_cast<int64_t>(p.num_heads) * p.head_dim && p.q_row_stride % 8 == 0,
      "q_row_stride must hold num_heads * head_dim and be a multiple of 8");
  require(
      aligned(p.q, 16) && aligned(p.cache.k, 16) && aligned(p.cache.v, 16) && aligned(p.out, 16),
      "q, caches and out must be 16-byte aligned");
  if (f != DType::bf16) {
    require(p.cache.k_scale != nullptr && p.cache.v_scale != nullptr,
            "an int8 or fp8 cache needs k_scale and v_scale");
    require(aligned(p.cache.k_scale, 4) && aligned(p.cache.v_scale, 4),
            "k_scale and v_scale must be 4-byte aligned");
  }
}

}  // namespace

size_t paged_attention_workspace_bytes(int max_tokens, int num_heads, int head_dim,
                                       int max_context_len, bool naive) {
  if (max_tokens <= 0 || num_heads <= 0 || max_context_len <= 0) return 0;
  const size_t flash = static_cast<size_t>(split_rows(max_tokens, max_context_len)) *
                       detail::decode_row_bytes(num_heads, head_dim);
  if (!naive) return flash;
  // The naive path's score rows for every token, capped (the launcher then runs the tokens in
  // chunks), but at least one token's; and at least what the flash path needs, so that one
  // workspace serves both.
  const size_t per_token = detail::naive_token_bytes(num_heads, max_context_len);
  const size_t all_tokens = per_token * static_cast<size_t>(max_tokens);
  return std::max({flash, per_token, std::min(all_tokens, kNaiveWorkspaceCap)});
}

namespace {

// The decode kernel over the sequences with one new token (`decode_seqs` of them; in a mixed
// batch the kernel passes over the others), split as model/engine_decode_plan.hpp plans it, all
// splits in the workspace (whose rows are indexed by sequence). For batch 1 × context 1024 with
// 8 KV heads that is 16 splits of 64 positions: 128 CTAs of 32 KB each. bf16 caches take the
// streamed kernel at every batch, the others the chunked one.
void launch_decode_path(const PagedAttentionParams& p, int64_t decode_seqs, cudaStream_t stream) {
  const int64_t sms = sm_count();
  // (In a mixed batch nobody checked the workspace: a missing or misaligned one holds nothing.)
  const bool usable = p.workspace != nullptr && aligned(p.workspace, 16);
  const int64_t capacity =
      usable ? static_cast<int64_t>(p.workspace_bytes /
                                    detail::decode_row_bytes(p.num_heads, p.head_dim))
             : 0;
  // Planned for the context bound a captured decode graph has (cuda_backend.cpp), not the exact
  // maximum, so that an eager call and a graph replay of the same batch split alike and give the
  // same bits.
  const int64_t workspace_splits = std::min(capacity / p.num_seqs, int64_t{detail::kMaxSplits});
  const DecodeSplitPlan plan = decode_split_plan(decode_seqs, p.num_heads, p.num_kv_heads, sms,
                                                 p.max_context_len, workspace_splits);
  int64_t splits = plan.splits, partition = plan.partition;
  if (p.decode_splits > 0) {
    const int64_t plan_context = graph_context_bucket(p.max_context_len);
    const int64_t max_splits = std::min(ceil_div(plan_context, kMinPartition), workspace_splits);
    splits = std::clamp(p.decode_splits, int64_t{1}, std::max(max_splits, int64_t{1}));
    partition = ceil_div(plan_context, splits);
    splits = ceil_div(plan_context, partition);
  }
  DecodeKernel kernel = p.decode_kernel;
  // The streamed kernel at every batch: on the H200 it was faster than the chunked one at
  // batch 1 (7.1 against 7.9 µs at context 1024, 12.8 against 15.4 at 4096) and from 16 on
  // (docs/MEASUREMENTS.md §23-24).
  if (kernel == DecodeKernel::automatic) kernel = DecodeKernel::streamed;
  // (The streamed kernel reads bf16 caches in blocks of a multiple of 16 positions only; other
  // caches take the chunked kernel.)
  const bool streamed =
      kernel == DecodeKernel::streamed && p.cache.format == DType::bf16 && p.block_size % 16 == 0;
  detail::launch_decode(p, static_cast<int>(splits), static_cast<int>(partition), streamed,
                        programmatic_launch(p), stream);
}

void require_workspace(const PagedAttentionParams& p, size_t needed) {
  require(p.workspace_bytes >= needed && (needed == 0 || p.workspace != nullptr),
          "workspace of " + std::to_string(p.workspace_bytes) + " bytes, " +
              std::to_string(needed) + " needed");
  require(needed == 0 || aligned(p.workspace, 16), "workspace must be 16-byte aligned");
}

}  // namespace

void paged_attention(const PagedAttentionParams& p, cudaStream_t stream) {
  check(p);
  if (p.num_seqs == 0 || p.num_tokens == 0) return;
  if (p.naive) {
    require_workspace(p, detail::naive_token_bytes(p.num_heads, p.max_context_len));
    detail::launch_naive(p, stream);
    return;
  }
  if (p.max_query_len > 1) {
    if (p.single_query_seqs <= 0) {
      launch_tiled_prefill(p, stream);
      return;
    }
    PagedAttentionParams tiled = p;
    tiled.skip_single_queries = true;
    launch_tiled_prefill(tiled, stream);
    launch_decode_path(p, p.single_query_seqs, stream);
    return;
  }
  require_workspace(
      p, paged_attention_workspace_bytes(p.num_tokens, p.num_heads, p.head_dim, p.max_context_len));
  launch_decode_path(p, p.num_seqs, stream);
}

}  // namespace inferlab::engine::cuda
