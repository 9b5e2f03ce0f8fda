// The CUDA paged-attention kernels against the CPU reference (cpu::paged_attention, one query
// token at a time over an fp32 CpuKvCache holding the same bf16-rounded keys and values).
#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include "engine/cuda/attention.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/bf16.hpp"
#include "engine/cpu/ops.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda_backend.hpp"
#include "engine/kv_cache.hpp"

namespace inferlab::engine {
namespace {

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

// One batch on the host: the CPU cache (fp32 copies of bf16 values), the bf16 bits the GPU gets,
// shuffled block tables, and queries in rows as wide as a fused QKV output.
struct Batch {
  explicit Batch(const AttnCase& spec)
      : c(spec),
        layout{1, spec.num_kv_heads, spec.head_dim, spec.block_size, 0},
        cache(layout_with_blocks(spec)) {
    layout = cache.layout();
    std::mt19937 rng(spec.seed);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    // Every slot gets random data, unused ones too: reading past a context shows up as error.
    const int64_t row = layout.num_kv_heads * layout.head_dim;
    k_bits.resize(static_cast<size_t>(layout.slots() * row));
    v_bits.resize(k_bits.size());
    for (int64_t slot = 0; slot < layout.slots(); ++slot) {
      for (int64_t i = 0; i < row; ++i) {
        const size_t at = static_cast<size_t>(slot * row + i);
        k_bits[at] = float_to_bf16(unit(rng));
        v_bits[at] = float_to_bf16(unit(rng));
        cache.key(0, slot)[i] = bf16_to_float(k_bits[at]);
        cache.value(0, slot)[i] = bf16_to_float(v_bits[at]);
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
  void set_key(int64_t slot, int kv_head, const std::vector<float>& values) {
    set(k_bits, cache.key(0, slot), slot, kv_head, values);
  }
  void set_value(int64_t slot, int kv_head, const std::vector<float>& values) {
    set(v_bits, cache.value(0, slot), slot, kv_head, values);
  }
  void set_query(int token, int head, const std::vector<float>& values) {
    for (size_t i = 0; i < values.size(); ++i) {
      q_bits[static_cast<size_t>(token) * q_row_stride + head * c.head_dim + i] =
          float_to_bf16(values[i]);
    }
  }

  AttnCase c;
  KvCacheLayout layout;
  CpuKvCache cache;
  std::vector<uint16_t> k_bits, v_bits, q_bits;
  std::vector<BlockTable> tables;
  std::vector<int32_t> flat_tables, query_start, context_lens;
  int table_stride = 1, num_tokens = 0, q_row_stride = 0, max_query_len = 0, max_context_len = 0;

 private:
  void set(std::vector<uint16_t>& bits, float* cpu, int64_t slot, int kv_head,
           const std::vector<float>& values) {
    for (size_t i = 0; i < values.size(); ++i) {
      const size_t at = static_cast<size_t>(kv_head * c.head_dim) + i;
      bits[static_cast<size_t>(slot * layout.num_kv_heads * layout.head_dim) + at] =
          float_to_bf16(values[i]);
      cpu[at] = bf16_to_float(float_to_bf16(values[i]));
    }
  }
};

const __nv_bfloat16* bf16_ptr(const cuda::DeviceBuffer<uint16_t>& b) {
  return reinterpret_cast<const __nv_bfloat16*>(b.data());
}

// The GPU's output [num_tokens, num_heads * head_dim] as floats. The workspace is sized for
// `workspace_tokens` tokens (at least the batch's), as an engine sizes it for its largest batch.
std::vector<float> run_gpu(const Batch& b, int workspace_tokens = 0) {
  using cuda::DeviceBuffer;
  DeviceBuffer<uint16_t> q(b.q_bits.size()), k(b.k_bits.size()), v(b.v_bits.size());
  q.upload(b.q_bits.data(), b.q_bits.size());
  k.upload(b.k_bits.data(), b.k_bits.size());
  v.upload(b.v_bits.data(), b.v_bits.size());
  DeviceBuffer<int32_t> tables(b.flat_tables.size()), starts(b.query_start.size()),
      lens(b.context_lens.size());
  tables.upload(b.flat_tables.data(), b.flat_tables.size());
  starts.upload(b.query_start.data(), b.query_start.size());
  lens.upload(b.context_lens.data(), b.context_lens.size());
  const size_t out_count = static_cast<size_t>(b.num_tokens) * b.c.num_heads * b.c.head_dim;
  DeviceBuffer<uint16_t> out(out_count);
  const size_t ws_bytes = cuda::paged_attention_workspace_bytes(
      std::max(workspace_tokens, b.num_tokens), b.c.num_heads, b.c.head_dim, b.max_context_len);
  DeviceBuffer<unsigned char> workspace(ws_bytes);

  cuda::PagedAttentionParams p;
  p.q = bf16_ptr(q);
  p.q_row_stride = b.q_row_stride;
  p.cache = {inferlab::DType::bf16, const_cast<__nv_bfloat16*>(bf16_ptr(k)),
             const_cast<__nv_bfloat16*>(bf16_ptr(v)), nullptr, nullptr};
  p.block_tables = tables.data();
  p.block_table_stride = b.table_stride;
  p.query_start = starts.data();
  p.context_lens = lens.data();
  p.num_seqs = static_cast<int>(b.c.seqs.size());
  p.num_tokens = b.num_tokens;
  p.max_query_len = b.max_query_len;
  p.max_context_len = b.max_context_len;
  // Mixed batches: the one-token sequences take the decode kernel, as the backend runs them.
  for (const auto& s : b.c.seqs) p.single_query_seqs += s.query_len == 1 ? 1 : 0;
  p.num_heads = b.c.num_heads;
  p.num_kv_heads = b.c.num_kv_heads;
  p.head_dim = b.c.head_dim;
  p.block_size = b.c.block_size;
  p.sliding_window = b.c.sliding_window;
  p.softmax_scale = 1.0f / std::sqrt(static_cast<float>(b.c.head_dim));
  p.out = reinterpret_cast<__nv_bfloat16*>(out.data());
  p.workspace = workspace.data();
  p.workspace_bytes = ws_bytes;
  cuda::paged_attention(p, nullptr);
  INFERLAB_CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<uint16_t> bits(out_count);
  out.download(bits.data(), out_count);
  std::vector<float> result(out_count);
  for (size_t i = 0; i < out_count; ++i) result[i] = bf16_to_float(bits[i]);
  return result;
}

// The CPU reference for every new token of the batch, in the GPU's output layout.
std::vector<float> run_cpu(const Batch& b) {
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
// and the tiled kernel rounds the softmax weights to bf16 before P·V: each weight off by at most
// 2^-9 of itself, so the output by at most 2^-9 · max|v| ≈ 1.95e-3 for values in [-1, 1] (the
// absolute term). fp32 accumulation order adds ~1e-6.
void expect_close(const std::vector<float>& gpu, const std::vector<float>& ref, const Batch& b) {
  ASSERT_EQ(gpu.size(), ref.size());
  const size_t width = static_cast<size_t>(b.c.num_heads) * b.c.head_dim;
  int bad = 0;
  double worst = 0;
  for (size_t i = 0; i < gpu.size(); ++i) {
    const double err = std::abs(double{gpu[i]} - ref[i]);
    worst = std::max(worst, err);
    if (!(err <= 2e-3 + 1e-2 * std::abs(ref[i]))) {
      if (++bad <= 8) {
        ADD_FAILURE() << "token " << i / width << " head " << (i % width) / b.c.head_dim << " dim "
                      << i % b.c.head_dim << ": gpu " << gpu[i] << " cpu " << ref[i];
      }
    }
  }
  EXPECT_EQ(bad, 0) << "of " << gpu.size() << " outputs; worst error " << worst;
}

void check_case(const AttnCase& spec, int workspace_tokens = 0) {
  const Batch b(spec);
  expect_close(run_gpu(b, workspace_tokens), run_cpu(b), b);
}

class CudaAttention : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  }
};

std::vector<SeqSpec> decode_seqs(std::initializer_list<int> contexts) {
  std::vector<SeqSpec> seqs;
  for (int c : contexts) seqs.push_back({c, 1});
  return seqs;
}

// Two tokens worked by hand: token 0 sees only (k0, v0) so its output is v0; token 1 scores
// q1·k0/8 = 0 and q1·k1/8 = 1, so it outputs (v0 + e v1) / (1 + e) = -tanh(1/2) everywhere.
TEST_F(CudaAttention, HandWorkedTwoTokensPrefillAndDecode) {
  const int d = 64;
  const std::vector<float> ones(d, 1.0f), minus_ones(d, -1.0f), zeros(d, 0.0f);
  std::vector<float> q1(d, 0.0f), k1(d, 0.0f);
  q1[0] = 8.0f;
  k1[0] = 1.0f;
  const float expected1 = -std::tanh(0.5f);
  for (int query_len : {2, 1}) {  // prefill both tokens, then decode the second alone
    AttnCase spec{1, 1, d, 16, 0, {{2, query_len}}, 7};
    Batch b(spec);
    b.set_key(b.slot(0, 0), 0, zeros);
    b.set_key(b.slot(0, 1), 0, k1);
    b.set_value(b.slot(0, 0), 0, ones);
    b.set_value(b.slot(0, 1), 0, minus_ones);
    b.set_query(query_len - 1, 0, q1);
    const std::vector<float> out = run_gpu(b);
    for (int i = 0; i < d; ++i) {
      if (query_len == 2) {
        EXPECT_EQ(out[static_cast<size_t>(i)], 1.0f) << i;
      }
      EXPECT_NEAR(out[static_cast<size_t>((query_len - 1) * d + i)], expected1, 2e-3) << i;
    }
  }
}

TEST_F(CudaAttention, DecodeGroup4Head128) {
  check_case({32, 8, 128, 16, 0, decode_seqs({1, 17, 100, 513, 1000, 64, 65}), 2});
}

TEST_F(CudaAttention, DecodeLongContextsSplitK) {
  check_case({4, 4, 64, 16, 0, decode_seqs({4100, 5000, 33}), 3});   // group 1
  check_case({12, 4, 128, 16, 0, decode_seqs({4103, 1, 4500}), 4});  // group 3
}

TEST_F(CudaAttention, DecodeWorkspaceSizedForLargerBatch) {
  check_case({8, 2, 128, 16, 0, decode_seqs({3000, 700}), 5}, 256);
}

TEST_F(CudaAttention, DecodeGroup16TwoHeadTiles) {
  check_case({16, 1, 64, 16, 0, decode_seqs({300, 2000}), 6});
}

TEST_F(CudaAttention, DecodeLargeBatchOneSplit) {
  // 160 sequences × 8 KV heads fill an H100 without splitting: outputs are written directly.
  std::mt19937 rng(8);
  std::vector<SeqSpec> seqs;
  for (int i = 0; i < 160; ++i) seqs.push_back({50 + static_cast<int>(rng() % 350), 1});
  check_case({32, 8, 128, 16, 0, seqs, 9});
}

TEST_F(CudaAttention, PrefillFreshSequences) {
  check_case({8, 2, 128, 16, 0, {{70, 70}, {130, 130}, {2, 2}}, 10});
}

TEST_F(CudaAttention, MixedBatchWithCachedPrefixes) {
  // Cached prefixes, a decode token among prefills, query lengths off the 64-token tile, and a
  // context of 63 blocks.
  check_case({8, 2, 128, 16, 0, {{300, 37}, {129, 1}, {1000, 200}, {64, 64}, {17, 5}}, 11});
}

TEST_F(CudaAttention, MixedBatchHead64Group3) {
  check_case({6, 2, 64, 16, 0, {{500, 100}, {77, 1}, {260, 130}}, 12});
}

TEST_F(CudaAttention, PrefillGroup1Head64Block32) {
  check_case({4, 4, 64, 32, 0, {{200, 200}, {90, 3}, {33, 33}}, 13});
}

TEST_F(CudaAttention, SlidingWindowPrefillAndDecode) {
  check_case({8, 4, 128, 16, 50, {{300, 120}, {40, 40}, {500, 1}, {130, 65}}, 14});
  check_case({8, 4, 128, 16, 300, decode_seqs({2000, 45, 4200, 301}), 15});
  check_case({4, 2, 64, 16, 64, {{256, 256}, {190, 2}}, 16});  // window on a tile edge
}

// Enough heads × 256-query tiles for the kernel of two m-tiles per warp (the others take the
// one-m-tile kernel).
TEST_F(CudaAttention, PrefillLargeTiles) {
  check_case({32, 8, 128, 16, 0, {{600, 300}, {300, 260}, {40, 40}, {513, 257}}, 17});
  check_case({32, 8, 64, 16, 100, {{400, 300}, {300, 280}, {270, 260}}, 18});  // + window
}

// Argument checks throw before touching the GPU, so these run without one.
TEST(CudaAttentionArguments, RejectsUnsupportedHeadDimAndSmallWorkspace) {
  alignas(16) static uint16_t dummy[64];
  alignas(16) static int32_t ints[4] = {0, 1, 0, 0};
  cuda::PagedAttentionParams p;
  p.q = reinterpret_cast<const __nv_bfloat16*>(dummy);
  p.cache = {inferlab::DType::bf16, const_cast<__nv_bfloat16*>(p.q),
             const_cast<__nv_bfloat16*>(p.q), nullptr, nullptr};
  p.out = reinterpret_cast<__nv_bfloat16*>(dummy);
  p.block_tables = ints;
  p.query_start = ints;
  p.context_lens = ints;
  p.num_seqs = 1;
  p.num_tokens = 1;
  p.max_query_len = 1;
  p.max_context_len = 4096;
  p.num_heads = 32;
  p.num_kv_heads = 8;
  p.block_size = 16;
  p.softmax_scale = 0.1f;
  p.head_dim = 96;
  p.q_row_stride = 32 * 96;
  EXPECT_THROW(cuda::paged_attention(p, nullptr), std::invalid_argument);
  p.head_dim = 128;
  p.q_row_stride = 48 * 128;
  EXPECT_GT(cuda::paged_attention_workspace_bytes(1, 32, 128, 4096), 0u);
  EXPECT_THROW(cuda::paged_attention(p, nullptr), std::invalid_argument);  // no workspace
  // The workspace grows with the batch and the context (a buffer for the maxima serves all).
  EXPECT_LE(cuda::paged_attention_workspace_bytes(8, 32, 128, 4096),
            cuda::paged_attention_workspace_bytes(9, 32, 128, 4096));
  EXPECT_LE(cuda::paged_attention_workspace_bytes(8, 32, 128, 4096),
            cuda::paged_attention_workspace_bytes(8, 32, 128, 8192));
}

}  // namespace
}  // namespace inferlab::engine
#endif  // INFERLAB_ENGINE_HAVE_CUDA
