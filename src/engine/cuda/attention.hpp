#pragma once
// Causal attention of a batch of sequences over the paged KV cache, bf16 in and out, fp32
// softmax and accumulation. Sequence s has query_len(s) = query_start[s+1] - query_start[s] new
// tokens, already written (keys and values, RoPE applied) into the cache, and context_lens[s]
// tokens in all: its new token j sits at position context_lens[s] - query_len(s) + j and attends
// to every position up to its own (within the sliding window when one is set), reading keys and
// values through the sequence's block table. GQA: query head h reads KV head
// h / (num_heads / num_kv_heads).
//
// Five paths behind one call (attention.cu chooses):
//  - decode (every sequence has one new token): split-K flash-decoding, each split of the context
//    writing a partial output and its log-sum-exp and a combine kernel merging them, split as
//    model/engine_decode_plan.hpp plans it; the split kernel is the streamed one
//    (attention_decode_stream.cu: bf16 caches in blocks of a multiple of 16) or the chunked one
//    (attention_decode.cu: the 8-bit caches);
//  - prefill: a FlashAttention-style tiled kernel (query tiles × key tiles, online softmax) that
//    also attends to each sequence's cached prefix: the Hopper one (attention_prefill_hopper.cu:
//    wgmma, TMA, warp-specialised) where it runs the batch, else the mma.sync one
//    (attention_prefill.cu);
//  - mixed batches: the sequences with one new token (single_query_seqs > 0) to the decode path
//    and the others to the tiled one (a tile of 128 query rows with one real row would read the
//    whole context once per query head for a single query);
//  - naive (below).
// The CPU reference is cpu::paged_attention (engine/cpu/ops.hpp).
//
// Head sizes (engine/attention_head_dims.hpp): 64, 128, 192 and 256, every kernel instantiated
// for each, except the Hopper prefill, which runs 64 and 128 (at 192 and 256 the mma.sync prefill
// runs instead: attention_prefill_hopper.cu says why), and the naive path's grouped prefill
// kernels, which run up to 128 (above, one query token per CTA: attention_naive.cu).
//
// The cache is bf16, or int8 / FP8 E4M3 with one fp32 scale per (slot, KV head): the stored
// vector of head_dim values q stands for scale · q (quantize_row_int8 / quantize_row_e4m3 of
// engine/quant/quantize.hpp wrote it). The kernels dequantize as they read.
//
// `naive` selects the unfused baseline instead (the ablation's plain step, `--attention naive`):
// the scores of every query against its whole context materialized in an fp32 workspace, a
// softmax pass, then the weighted sum of values: three kernels, as an implementation without
// FlashAttention runs it.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "engine/engine_tuning.hpp"
#include "util/dtype.hpp"

namespace inferlab::engine::cuda {

// One layer's slice of the paged KV cache: element (slot, kv_head, i) of keys at
// k + (slot · num_kv_heads + kv_head) · head_dim, in `format` (bf16, int8 or fp8); for int8 and
// fp8 the scales of that vector at k_scale[slot · num_kv_heads + kv_head]. Values the same.
struct KvLayerCache {
  DType format = DType::bf16;
  void* k = nullptr;
  void* v = nullptr;
  float* k_scale = nullptr;
  float* v_scale = nullptr;
};

// Bytes of one cache element in `format` (2 for bf16, 1 for int8 and fp8).
inline int kv_element_bytes(DType format) {
  return format == DType::bf16 ? 2 : 1;
}

// The decode kernel for the sequences with one new token. `automatic`: the streamed one
// (tensor cores, a cp.async ring per warp) for bf16 caches in blocks of a multiple of 16
// positions, the chunked one for every other cache. The others force one kernel (tests,
// benchmarks, and AttentionTuning::decode_kernel: INFERLAB_ENGINE_DECODE_KERNEL=chunked|streamed).
enum class DecodeKernel { automatic, chunked, streamed };

struct PagedAttentionParams {
  // Query of token t, head h: q + t * q_row_stride + h * head_dim (the fused QKV GEMM output,
  // whose rows are q_dim + 2 kv_dim wide).
  const __nv_bfloat16* q = nullptr;
  int64_t q_row_stride = 0;
  // This layer's cache (slot = block_table[p / block_size] * block_size + p % block_size).
  KvLayerCache cache;
  const int32_t* block_tables = nullptr;  // device, [num_seqs, block_table_stride]
  int block_table_stride = 0;
  // Decode path only (max_query_len 1): the block-table row each sequence reads (device,
  // [num_seqs]), so that the tokens of a few sequences run as sequences of one query each
  // (ForwardMetadata's token view); nullptr: sequence s reads row s.
  const int32_t* table_rows = nullptr;
  const int32_t* query_start = nullptr;   // device, [num_seqs + 1], query_start[0] = 0
  const int32_t* context_lens = nullptr;  // device, [num_seqs]
  int num_seqs = 0;
  int num_tokens = 0;     // query_start[num_seqs]
  int max_query_len = 0;  // host copies of the maxima, for the launch grid
  int max_context_len = 0;
  int single_query_seqs = 0;         // host count of sequences with one new token (0: not counted)
  bool skip_single_queries = false;  // set by paged_attention: the tiled kernel leaves them
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;              // 64, 128, 192 or 256 (engine/attention_head_dims.hpp)
  int block_size = 0;            // tokens per cache block (16 by default)
  int sliding_window = 0;        // 0: none; else keys at positions > position - sliding_window
  float softmax_scale = 0;       // 1 / sqrt(head_dim)
  __nv_bfloat16* out = nullptr;  // [num_tokens, num_heads * head_dim]
  bool naive = false;  // the unfused baseline (materialized scores) instead of the flash kernels
  DecodeKernel decode_kernel = DecodeKernel::automatic;
  // > 0: the split count every decode call asks for, within what the context and workspace allow
  // (A/B of the split plan: AttentionTuning::decode_splits); 0: the plan's.
  int64_t decode_splits = 0;
  bool hopper_prefill = true;       // false: the mma.sync prefill even where the Hopper one runs
  bool programmatic_launch = true;  // false: the decode kernels without PDL on Hopper
  // The streamed decode kernel reads the cache rows of earlier passes before its grid wait, so
  // that they are in flight while the kernel before it (the QKV projection) ends; false: after it
  // (AttentionTuning::cache_before_wait).
  bool cache_before_wait = true;
  // Scratch for the split-K partials (and the naive path's scores); at least
  // paged_attention_workspace_bytes(...).
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// The tuning's kernel choices into `params` (the backend's layers and the benchmarks).
inline void apply_attention_tuning(const AttentionTuning& tuning, PagedAttentionParams* params) {
  params->decode_kernel =
      tuning.decode_kernel == DecodeKernelChoice::chunked    ? DecodeKernel::chunked
      : tuning.decode_kernel == DecodeKernelChoice::streamed ? DecodeKernel::streamed
                                                             : DecodeKernel::automatic;
  params->decode_splits = tuning.decode_splits;
  params->hopper_prefill = tuning.hopper_prefill;
  params->programmatic_launch = tuning.programmatic_launch;
  params->cache_before_wait = tuning.cache_before_wait;
}

// Scratch the decode path (and, with naive, the naive path) needs for up to max_tokens tokens at
// these sizes. The naive path processes its queries in chunks that fit the workspace: with
// naive, the score rows of all max_tokens tokens (num_heads × max_context_len fp32 each, the
// context rounded up to a multiple of 4) capped at 256 MiB, but never less than one token's rows
// nor than the flash path's need (one buffer serves both paths). A naive call needs at least one
// token's rows and runs floor(workspace_bytes / one token's rows) tokens per chunk.
size_t paged_attention_workspace_bytes(int max_tokens, int num_heads, int head_dim,
                                       int max_context_len, bool naive = false);

// Launches on `stream` (no synchronisation, no allocation: graph-capturable). Throws
// std::invalid_argument for an unsupported head_dim or cache format, missing scales, or a
// workspace that is too small. On Hopper the decode kernels are launched with programmatic
// dependent launch (their start overlaps the previous kernel's end; they wait for it before
// reading anything) unless params.programmatic_launch is false.
void paged_attention(const PagedAttentionParams& params, cudaStream_t stream);

}  // namespace inferlab::engine::cuda
