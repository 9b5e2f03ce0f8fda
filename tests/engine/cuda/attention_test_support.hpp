#pragma once
// What the CUDA paged-attention tests share: a batch on the host (the cache in bf16, int8 or fp8
// as the GPU holds it, and the values it stands for in an fp32 CpuKvCache), the GPU call with
// poisoned outputs, the CPU reference (cpu::paged_attention one query token at a time) and the
// tolerance.
#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "engine/bf16.hpp"
#include "engine/cpu/ops.hpp"
#include "engine/cuda/attention.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/fill_kernels.hpp"
#include "engine/kv_cache.hpp"
#include "engine/quant/quantize.hpp"

namespace inferlab::engine::attention_test {

struct SeqSpec {
  int context_len = 0;  // tokens in all, the new ones included
  int query_len = 0;    // new tokens (already in the cache)
};

struct AttnCase {
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int block_size = 16;
  int sliding_window = 0;
  std::vector<SeqSpec> seqs;
  uint32_t seed = 1;
};

inline std::vector<SeqSpec> decode_seqs(std::initializer_list<int> contexts) {
  std::vector<SeqSpec> seqs;
  for (int c : contexts) seqs.push_back({c, 1});
  return seqs;
}

// One batch on the host: the cache's bytes as the GPU gets them (bf16 bits, or int8 / E4M3
// bytes with one scale per (slot, KV head), quantized by quantize_row_int8 / quantize_row_e4m3),
// the values they stand for in the CPU cache, shuffled block tables, and queries in rows as wide
// as a fused QKV output.
struct Batch {
  Batch(const AttnCase& spec, DType cache_format)
      : c(spec), format(cache_format), cache(layout_with_blocks(spec)) {
    layout = cache.layout();
    std::mt19937 rng(spec.seed);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    std::uniform_real_distribution<float> magnitude(0.3f, 1.0f);
    const int64_t vectors = layout.slots() * layout.num_kv_heads;
    const size_t elem = format == DType::bf16 ? 2 : 1;
    k_bytes.assign(static_cast<size_t>(vectors * layout.head_dim) * elem, 0);
    v_bytes.assign(k_bytes.size(), 0);
    k_scales.assign(static_cast<size_t>(vectors), 1.0f);
    v_scales.assign(k_scales.size(), 1.0f);
    // Every slot gets random data, unused ones too: reading past a context shows up as error.
    // Each vector has its own magnitude (below 1, so |v| ≤ 1 as the tolerance assumes), so
    // the scales differ from vector to vector.
    std::vector<float> values(static_cast<size_t>(layout.head_dim));
    for (int64_t slot = 0; slot < layout.slots(); ++slot) {
      for (int h = 0; h < layout.num_kv_heads; ++h) {
        for (int key = 1; key >= 0; --key) {
          const float m = magnitude(rng);
          for (float& x : values) x = m * unit(rng);
          set_vector(key == 1, slot, h, values);
        }
      }
    }
    std::vector<int32_t> ids(static_cast<size_t>(layout.num_blocks));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    size_t next = 0;
    query_start.push_back(0);
    for (const SeqSpec& s : spec.seqs) {
      BlockTable table;
      for (int64_t b = 0; b < layout.blocks_for(s.context_len); ++b) table.push_back(ids[next++]);
      table_stride = std::max(table_stride, static_cast<int>(table.size()) + 1);
      tables.push_back(table);
      query_start.push_back(query_start.back() + s.query_len);
      context_lens.push_back(s.context_len);
      max_query_len = std::max(max_query_len, s.query_len);
      max_context_len = std::max(max_context_len, s.context_len);
      single_query_seqs += s.query_len == 1 ? 1 : 0;
    }
    // Entries past a sequence's blocks are -1: using one would read outside the cache.
    flat_tables.assign(tables.size() * static_cast<size_t>(table_stride), -1);
    for (size_t s = 0; s < tables.size(); ++s) {
      std::copy(tables[s].begin(), tables[s].end(),
                flat_tables.begin() + static_cast<ptrdiff_t>(s * table_stride));
    }
    num_tokens = query_start.back();
    q_row_stride = (spec.num_heads + 2 * spec.num_kv_heads) * spec.head_dim;
    q_bits.resize(static_cast<size_t>(num_tokens) * q_row_stride);
    for (uint16_t& q : q_bits) q = float_to_bf16(unit(rng));
  }

  static KvCacheLayout layout_with_blocks(const AttnCase& spec) {
    KvCacheLayout l{1, spec.num_kv_heads, spec.head_dim, spec.block_size, 0};
    for (const SeqSpec& s : spec.seqs) l.num_blocks += l.blocks_for(s.context_len);
    l.num_blocks += 3;  // spare blocks nobody owns
    return l;
  }

  int64_t slot(int seq, int position) const {
    return kv_slot(tables[static_cast<size_t>(seq)], layout.block_size, position);
  }

  // Stores one key (or value) vector in the GPU's format and what it stands for in the CPU cache.
  void set_vector(bool key, int64_t slot, int kv_head, const std::vector<float>& values) {
    const int64_t d = layout.head_dim;
    const int64_t vector = slot * layout.num_kv_heads + kv_head;
    std::vector<uint8_t>& bytes = key ? k_bytes : v_bytes;
    float* cpu = (key ? cache.key(0, slot) : cache.value(0, slot)) + kv_head * d;
    if (format == DType::bf16) {
      for (int64_t i = 0; i < d; ++i) {
        const uint16_t bits = float_to_bf16(values[static_cast<size_t>(i)]);
        bytes[static_cast<size_t>(2 * (vector * d + i))] = static_cast<uint8_t>(bits & 0xff);
        bytes[static_cast<size_t>(2 * (vector * d + i) + 1)] = static_cast<uint8_t>(bits >> 8);
        cpu[i] = bf16_to_float(bits);
      }
      return;
    }
    uint8_t* q = bytes.data() + vector * d;
    float scale;
    if (format == DType::int8) {
      scale = quantize_row_int8(values.data(), d, reinterpret_cast<int8_t*>(q));
      for (int64_t i = 0; i < d; ++i)
        cpu[i] = scale * static_cast<float>(static_cast<int8_t>(q[i]));
    } else {
      scale = quantize_row_e4m3(values.data(), d, q);
      for (int64_t i = 0; i < d; ++i) cpu[i] = scale * e4m3_to_float(q[i]);
    }
    (key ? k_scales : v_scales)[static_cast<size_t>(vector)] = scale;
  }

  void set_query(int token, int head, const std::vector<float>& values) {
    for (size_t i = 0; i < values.size(); ++i) {
      q_bits[static_cast<size_t>(token) * q_row_stride + head * c.head_dim + i] =
          float_to_bf16(values[i]);
    }
  }

  AttnCase c;
  DType format;
  CpuKvCache cache;
  KvCacheLayout layout;
  std::vector<uint8_t> k_bytes, v_bytes;
  std::vector<float> k_scales, v_scales;  // [slot · num_kv_heads + kv_head]; int8/fp8 only
  std::vector<uint16_t> q_bits;
  std::vector<BlockTable> tables;
  std::vector<int32_t> flat_tables, query_start, context_lens;
  int table_stride = 1, num_tokens = 0, q_row_stride = 0, max_query_len = 0, max_context_len = 0;
  int single_query_seqs = 0;
};

// The GPU's output as bf16 bits and as floats.
struct GpuOutput {
  std::vector<uint16_t> bits;
  std::vector<float> values;
};

struct GpuOptions {
  bool naive = false;
  int workspace_tokens = 0;    // the workspace is sized for max(this, the batch's tokens)
  size_t workspace_bytes = 0;  // or exactly this many bytes, when not 0
  bool graph = false;          // captured in a CUDA graph and replayed, on a stream of its own
  cuda::DecodeKernel decode_kernel = cuda::DecodeKernel::automatic;
  // The batch's tokens as sequences of one query each, reading their sequence's block table
  // through PagedAttentionParams::table_rows (the backend's by-token attention for speculative
  // verification); flash only.
  bool by_token = false;
  // The streamed decode kernel's early cache reads (PagedAttentionParams::cache_before_wait).
  bool cache_before_wait = true;
  int64_t decode_splits = 0;  // PagedAttentionParams::decode_splits (0: the plan's)
};

// Runs paged_attention on the batch. The output, the workspace and every SM's shared memory are
// poisoned first (0xff bytes: NaN in bf16 and fp32), so an output nobody writes, a partial read
// before it was written, or a shared-memory row a kernel computes with but never filled, fails
// the comparison.
inline GpuOutput run_gpu(const Batch& b, const GpuOptions& o = {}) {
  using cuda::DeviceBuffer;
  DeviceBuffer<uint16_t> q(b.q_bits.size());
  q.upload(b.q_bits.data(), b.q_bits.size());
  DeviceBuffer<uint8_t> k(b.k_bytes.size()), v(b.v_bytes.size());
  k.upload(b.k_bytes.data(), b.k_bytes.size());
  v.upload(b.v_bytes.data(), b.v_bytes.size());
  DeviceBuffer<float> ks(b.k_scales.size()), vs(b.v_scales.size());
  ks.upload(b.k_scales.data(), b.k_scales.size());
  vs.upload(b.v_scales.data(), b.v_scales.size());
  // By token: token t of sequence s (its j-th new one) is sequence t, of context
  // context_len(s) - query_len(s) + j + 1, reading row s of the block tables.
  std::vector<int32_t> query_start = b.query_start, context_lens = b.context_lens, rows;
  if (o.by_token) {
    query_start.clear();
    context_lens.clear();
    for (size_t s = 0; s < b.c.seqs.size(); ++s) {
      const SeqSpec& seq = b.c.seqs[s];
      for (int j = 0; j < seq.query_len; ++j) {
        query_start.push_back(static_cast<int32_t>(query_start.size()));
        context_lens.push_back(seq.context_len - seq.query_len + j + 1);
        rows.push_back(static_cast<int32_t>(s));
      }
    }
    query_start.push_back(b.num_tokens);
  }
  DeviceBuffer<int32_t> tables(b.flat_tables.size()), starts(query_start.size()),
      lens(context_lens.size()), table_rows(std::max<size_t>(rows.size(), 1));
  tables.upload(b.flat_tables.data(), b.flat_tables.size());
  starts.upload(query_start.data(), query_start.size());
  lens.upload(context_lens.data(), context_lens.size());
  if (o.by_token) table_rows.upload(rows.data(), rows.size());
  const size_t out_count = static_cast<size_t>(b.num_tokens) * b.c.num_heads * b.c.head_dim;
  DeviceBuffer<uint16_t> out(out_count);
  INFERLAB_CUDA_CHECK(cudaMemset(out.data(), 0xff, out.bytes()));
  const size_t ws_bytes = o.workspace_bytes > 0
                              ? o.workspace_bytes
                              : cuda::paged_attention_workspace_bytes(
                                    std::max(o.workspace_tokens, b.num_tokens), b.c.num_heads,
                                    b.c.head_dim, b.max_context_len, o.naive);
  DeviceBuffer<unsigned char> workspace(ws_bytes);
  if (ws_bytes > 0) INFERLAB_CUDA_CHECK(cudaMemset(workspace.data(), 0xff, ws_bytes));

  cuda::PagedAttentionParams p;
  p.q = reinterpret_cast<const __nv_bfloat16*>(q.data());
  p.q_row_stride = b.q_row_stride;
  const bool quantized = b.format != DType::bf16;
  p.cache = {b.format, k.data(), v.data(), quantized ? ks.data() : nullptr,
             quantized ? vs.data() : nullptr};
  p.block_tables = tables.data();
  p.block_table_stride = b.table_stride;
  p.query_start = starts.data();
  p.context_lens = lens.data();
  p.num_seqs = static_cast<int>(b.c.seqs.size());
  p.num_tokens = b.num_tokens;
  p.max_query_len = b.max_query_len;
  p.max_context_len = b.max_context_len;
  // Mixed batches: the one-token sequences take the decode kernel, as the backend runs them.
  p.single_query_seqs = b.single_query_seqs;
  p.num_heads = b.c.num_heads;
  p.num_kv_heads = b.c.num_kv_heads;
  p.head_dim = b.c.head_dim;
  p.block_size = b.c.block_size;
  p.sliding_window = b.c.sliding_window;
  p.softmax_scale = 1.0f / std::sqrt(static_cast<float>(b.c.head_dim));
  p.out = reinterpret_cast<__nv_bfloat16*>(out.data());
  p.naive = o.naive;
  p.decode_kernel = o.decode_kernel;
  p.workspace = workspace.data();
  p.workspace_bytes = ws_bytes;
  p.cache_before_wait = o.cache_before_wait;
  p.decode_splits = o.decode_splits;
  if (o.by_token) {
    p.table_rows = table_rows.data();
    p.num_seqs = b.num_tokens;
    p.max_query_len = 1;
    p.single_query_seqs = b.num_tokens;
  }
  if (o.graph) {
    // Twice in one graph (the second call overwrites the first's output with the same values),
    // replayed twice: programmatic launches and the workspace's reuse inside a graph.
    cudaStream_t stream = nullptr;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    INFERLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cuda::poison_shared_memory(stream);
    INFERLAB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    cuda::paged_attention(p, stream);
    cuda::paged_attention(p, stream);
    INFERLAB_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    INFERLAB_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    INFERLAB_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    INFERLAB_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    INFERLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    INFERLAB_CUDA_CHECK(cudaGraphExecDestroy(exec));
    INFERLAB_CUDA_CHECK(cudaGraphDestroy(graph));
    INFERLAB_CUDA_CHECK(cudaStreamDestroy(stream));
  } else {
    cuda::poison_shared_memory(nullptr);
    cuda::paged_attention(p, nullptr);
  }
  INFERLAB_CUDA_CHECK(cudaDeviceSynchronize());

  GpuOutput result;
  result.bits.resize(out_count);
  out.download(result.bits.data(), out_count);
  result.values.resize(out_count);
  for (size_t i = 0; i < out_count; ++i) result.values[i] = bf16_to_float(result.bits[i]);
  return result;
}

// The CPU reference for every new token of the batch, in the GPU's output layout.
inline std::vector<float> run_cpu(const Batch& b) {
  const cpu::AttentionShape shape{b.c.num_heads, b.c.num_kv_heads, b.c.head_dim,
                                  b.c.sliding_window};
  const size_t width = static_cast<size_t>(b.c.num_heads) * b.c.head_dim;
  std::vector<float> result(static_cast<size_t>(b.num_tokens) * width);
  std::vector<float> q(width);
  for (size_t s = 0; s < b.c.seqs.size(); ++s) {
    const SeqSpec& seq = b.c.seqs[s];
    for (int j = 0; j < seq.query_len; ++j) {
      const int token = b.query_start[s] + j;
      for (size_t i = 0; i < width; ++i) {
        q[i] = bf16_to_float(b.q_bits[static_cast<size_t>(token) * b.q_row_stride + i]);
      }
      cpu::paged_attention(q.data(), seq.context_len - seq.query_len + j, b.cache, 0, b.tables[s],
                           shape, result.data() + token * width);
    }
  }
  return result;
}

// Tolerance: the GPU rounds its output to bf16 (relative 2^-9, inside the 1e-2 relative term),
// and the tiled kernel rounds the softmax weights to bf16 before P·V (for int8/fp8, the weights
// times the values' scales: the same relative rounding): each weight off by at most 2^-9 of
// itself, so the output by at most 2^-9 · max|v| ≈ 1.95e-3 for values in [-1, 1] (the absolute
// term). The reference holds the very values the quantized bytes stand for, so quantization adds
// nothing here; fp32 accumulation order and the scale applied to a dot product instead of to each
// element add ~1e-6. `what` names the comparison in failures.
inline void expect_close(const std::vector<float>& gpu, const std::vector<float>& ref,
                         const Batch& b, const char* what) {
  ASSERT_EQ(gpu.size(), ref.size()) << what;
  const size_t width = static_cast<size_t>(b.c.num_heads) * b.c.head_dim;
  int bad = 0;
  double worst = 0;
  for (size_t i = 0; i < gpu.size(); ++i) {
    const double err = std::abs(double{gpu[i]} - ref[i]);
    worst = std::max(worst, std::isnan(err) ? INFINITY : err);
    if (!(err <= 2e-3 + 1e-2 * std::abs(ref[i]))) {
      if (++bad <= 8) {
        ADD_FAILURE() << what << ": token " << i / width << " head " << (i % width) / b.c.head_dim
                      << " dim " << i % b.c.head_dim << ": got " << gpu[i] << " want " << ref[i];
      }
    }
  }
  EXPECT_EQ(bad, 0) << what << ": of " << gpu.size() << " outputs; worst error " << worst;
}

inline void expect_same_bits(const GpuOutput& a, const GpuOutput& b, const char* what) {
  ASSERT_EQ(a.bits.size(), b.bits.size());
  size_t differ = 0;
  for (size_t i = 0; i < a.bits.size(); ++i) differ += a.bits[i] != b.bits[i] ? 1 : 0;
  EXPECT_EQ(differ, 0u) << what << ": two runs differ in " << differ << " of " << a.bits.size();
}

// Both paths against the reference, twice each (bit-identical), and against each other; the
// flash path also with each decode kernel forced (chunked, streamed) whatever the batch (an
// int8 or fp8 cache takes the chunked kernel either way), and with the streamed kernel's cache
// reads all after its grid wait (the same bits).
// `options` sets the workspace (and graph capture) of every run.
inline void check_case(const AttnCase& spec, DType format, GpuOptions options = {}) {
  const Batch b(spec, format);
  const std::vector<float> ref = run_cpu(b);
  options.naive = false;
  const GpuOutput flash = run_gpu(b, options);
  expect_close(flash.values, ref, b, "flash vs cpu");
  expect_same_bits(flash, run_gpu(b, options), "flash");
  for (const auto kernel : {cuda::DecodeKernel::chunked, cuda::DecodeKernel::streamed}) {
    GpuOptions forced = options;
    forced.decode_kernel = kernel;
    const char* what =
        kernel == cuda::DecodeKernel::chunked ? "chunked decode kernel" : "streamed decode kernel";
    const GpuOutput out = run_gpu(b, forced);
    expect_close(out.values, ref, b, what);
    expect_same_bits(out, run_gpu(b, forced), what);
    forced.cache_before_wait = false;
    expect_same_bits(out, run_gpu(b, forced), "cache read after the grid wait");
  }
  options.naive = true;
  const GpuOutput naive = run_gpu(b, options);
  expect_close(naive.values, ref, b, "naive vs cpu");
  expect_same_bits(naive, run_gpu(b, options), "naive");
  expect_close(naive.values, flash.values, b, "naive vs flash");
}

}  // namespace inferlab::engine::attention_test
#endif  // INFERLAB_ENGINE_HAVE_CUDA
