// The CUDA paged-attention kernels against the CPU reference (cpu::paged_attention, one query
// token at a time over an fp32 CpuKvCache holding the values the GPU's cache stands for), for
// every cache format (bf16, int8, fp8) and both paths: flash (split-K decode, tiled prefill) and
// naive (scores materialized, softmax, P·V). Each case also checks that two runs give the same
// bits and that the naive path agrees with the flash one.
#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include "engine/cuda/attention.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention_test_support.hpp"
#include "engine/cuda_backend.hpp"

namespace inferlab::engine {
namespace {

using attention_test::AttnCase;
using attention_test::Batch;
using attention_test::check_case;
using attention_test::decode_seqs;
using attention_test::expect_close;
using attention_test::expect_same_bits;
using attention_test::GpuOptions;
using attention_test::GpuOutput;
using attention_test::run_cpu;
using attention_test::run_gpu;
using attention_test::SeqSpec;

// The cache format is the parameter; names read CudaAttention/CudaAttentionCache.<case>/<format>.
class CudaAttentionCache : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  }
};

INSTANTIATE_TEST_SUITE_P(CudaAttention, CudaAttentionCache,
                         ::testing::Values(DType::bf16, DType::int8, DType::fp8),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(dtype_name(info.param));
                         });

// Two tokens worked by hand: token 0 sees only (k0, v0) so its output is v0; token 1 scores
// q1·k0/8 = 0 and q1·k1/8 = 1, so it outputs (v0 + e v1) / (1 + e) = -tanh(1/2) everywhere.
// int8/fp8: ±1 and the unit vector quantize to 127 (448) with scale fl(1/127) (fl(1/448)); the
// tiled kernel rounds weight × scale to bf16 (fl(1/448) → 0.0022278, 0.2% low), so v0 comes out
// within 2^-9 of 1 and token 1 within 2^-9 · (1 + 0.47) of -tanh(1/2): 3e-3.
TEST_P(CudaAttentionCache, HandWorkedTwoTokensPrefillAndDecode) {
  const int d = 64;
  const double tolerance = GetParam() == DType::bf16 ? 2e-3 : 3e-3;
  const std::vector<float> ones(d, 1.0f), minus_ones(d, -1.0f), zeros(d, 0.0f);
  std::vector<float> q1(d, 0.0f), k1(d, 0.0f);
  q1[0] = 8.0f;
  k1[0] = 1.0f;
  const float expected1 = -std::tanh(0.5f);
  for (bool naive : {false, true}) {
    for (int query_len : {2, 1}) {  // prefill both tokens, then decode the second alone
      AttnCase spec{1, 1, d, 16, 0, {{2, query_len}}, 7};
      Batch b(spec, GetParam());
      b.set_vector(true, b.slot(0, 0), 0, zeros);
      b.set_vector(true, b.slot(0, 1), 0, k1);
      b.set_vector(false, b.slot(0, 0), 0, ones);
      b.set_vector(false, b.slot(0, 1), 0, minus_ones);
      b.set_query(query_len - 1, 0, q1);
      GpuOptions options;
      options.naive = naive;
      const std::vector<float> out = run_gpu(b, options).values;
      for (int i = 0; i < d; ++i) {
        if (query_len == 2 && GetParam() == DType::bf16) {
          EXPECT_EQ(out[static_cast<size_t>(i)], 1.0f) << i << " naive " << naive;
        } else if (query_len == 2) {
          EXPECT_NEAR(out[static_cast<size_t>(i)], 1.0f, tolerance) << i << " naive " << naive;
        }
        EXPECT_NEAR(out[static_cast<size_t>((query_len - 1) * d + i)], expected1, tolerance)
            << i << " naive " << naive;
      }
    }
  }
}

TEST_P(CudaAttentionCache, DecodeGroup4Head128) {
  check_case({32, 8, 128, 16, 0, decode_seqs({1, 17, 100, 513, 1000, 64, 65}), 2}, GetParam());
}

// The benchmark's Llama 3 8B shape at batch 1: 16 splits of 64 positions, a chunk each.
TEST_P(CudaAttentionCache, DecodeLlama8BBatch1Context1024) {
  check_case({32, 8, 128, 16, 0, decode_seqs({1024}), 19}, GetParam());
}

TEST_P(CudaAttentionCache, DecodeLongContextsSplitK) {
  check_case({4, 4, 64, 16, 0, decode_seqs({4100, 5000, 33}), 3}, GetParam());   // group 1
  check_case({12, 4, 128, 16, 0, decode_seqs({4103, 1, 4500}), 4}, GetParam());  // group 3
}

// Group 8 (one head tile), blocks of 32, contexts split and not; group 2 at head_dim 64.
TEST_P(CudaAttentionCache, DecodeGroup8Block32AndGroup2Head64) {
  check_case({32, 4, 128, 32, 0, decode_seqs({2047, 40, 3000, 3, 64}), 20}, GetParam());
  check_case({8, 4, 64, 16, 0, decode_seqs({700, 129, 2500}), 21}, GetParam());
}

TEST_P(CudaAttentionCache, DecodeWorkspaceSizedForLargerBatch) {
  GpuOptions options;
  options.workspace_tokens = 256;
  check_case({8, 2, 128, 16, 0, decode_seqs({3000, 700}), 5}, GetParam(), options);
}

TEST_P(CudaAttentionCache, DecodeGroup16TwoHeadTiles) {
  check_case({16, 1, 64, 16, 0, decode_seqs({300, 2000}), 6}, GetParam());
}

// 160 sequences × 8 KV heads fill an H100 without splitting: outputs are written directly.
TEST_P(CudaAttentionCache, DecodeLargeBatchOneSplit) {
  std::mt19937 rng(8);
  std::vector<SeqSpec> seqs;
  for (int i = 0; i < 160; ++i) seqs.push_back({50 + static_cast<int>(rng() % 350), 1});
  check_case({32, 8, 128, 16, 0, seqs, 9}, GetParam());
}

// Splits of a length not a multiple of 16 (33 splits of 125 positions at the 4096 bucket, as the
// plan gives one sequence of 8 KV heads on 132 SMs): the chunk of 16 that holds a split's last
// positions also holds the next split's first. With contexts 2126 and 2127 the new token's
// position (2125, 2126) lies in split 16's chunk [2112, 2128) past its end (2125), in a chunk the
// streamed kernel copies before its grid wait: that row must be zero-filled there like every row
// outside the split, not held back for the copy after the wait (which only the split that
// attends to it makes); shared memory is poisoned before every run.
TEST_P(CudaAttentionCache, DecodeSplitsNotAMultipleOfTheChunk) {
  GpuOptions options;
  options.decode_splits = 33;
  check_case({32, 8, 128, 16, 0, decode_seqs({2127, 2126, 2125, 90}), 27}, GetParam(), options);
  // 17 splits of 121 at the 2048 bucket: split 9 ends at 1210 inside its chunk [1200, 1216).
  options.decode_splits = 17;
  check_case({8, 2, 64, 16, 0, decode_seqs({1212, 1211, 600, 300}), 28}, GetParam(), options);
}

// A sequence without a new token in a decode batch: nothing to write for it, and the others'
// partials (indexed by sequence) stay in place.
TEST_P(CudaAttentionCache, DecodeWithASequenceWithoutNewTokens) {
  check_case({8, 2, 128, 16, 0, {{900, 1}, {300, 0}, {2000, 1}}, 22}, GetParam());
}

TEST_P(CudaAttentionCache, PrefillFreshSequences) {
  check_case({8, 2, 128, 16, 0, {{70, 70}, {130, 130}, {2, 2}}, 10}, GetParam());
}

TEST_P(CudaAttentionCache, PrefillGroup8) {
  check_case({16, 2, 128, 16, 0, {{150, 150}, {300, 100}}, 23}, GetParam());
}

TEST_P(CudaAttentionCache, MixedBatchWithCachedPrefixes) {
  // Cached prefixes, a decode token among prefills, query lengths off the 64-token tile, and a
  // context of 63 blocks.
  check_case({8, 2, 128, 16, 0, {{300, 37}, {129, 1}, {1000, 200}, {64, 64}, {17, 5}}, 11},
             GetParam());
}

TEST_P(CudaAttentionCache, MixedBatchHead64Group3) {
  check_case({6, 2, 64, 16, 0, {{500, 100}, {77, 1}, {260, 130}}, 12}, GetParam());
}

TEST_P(CudaAttentionCache, PrefillGroup1Head64Block32) {
  check_case({4, 4, 64, 32, 0, {{200, 200}, {90, 3}, {33, 33}}, 13}, GetParam());
}

TEST_P(CudaAttentionCache, SlidingWindowPrefillAndDecode) {
  check_case({8, 4, 128, 16, 50, {{300, 120}, {40, 40}, {500, 1}, {130, 65}}, 14}, GetParam());
  check_case({8, 4, 128, 16, 300, decode_seqs({2000, 45, 4200, 301}), 15}, GetParam());
  check_case({4, 2, 64, 16, 64, {{256, 256}, {190, 2}}, 16}, GetParam());  // window on a tile edge
  // Windows that start splits past their first chunk (the decode kernel's speculative block
  // table entries miss), at head_dim 64 where a chunk holds 128 (bf16) or 256 positions: on a
  // 132-SM GPU 11 splits of 464 positions, windows starting 224 and 336 into theirs.
  check_case({8, 8, 64, 16, 700, decode_seqs({5100, 3970, 1500}), 24}, GetParam());
}

// Enough heads × 256-query tiles for the kernel of two m-tiles per warp (the others take the
// one-m-tile kernel).
TEST_P(CudaAttentionCache, PrefillLargeTiles) {
  check_case({32, 8, 128, 16, 0, {{600, 300}, {300, 260}, {40, 40}, {513, 257}}, 17}, GetParam());
  check_case({32, 8, 64, 16, 100, {{400, 300}, {300, 280}, {270, 260}}, 18}, GetParam());
}

// The naive path with a workspace for a few tokens only: it walks the batch in chunks (a mixed
// batch: a CTA per query token; a prefill batch: groups of 16 tokens, cut by the chunks and by
// the sequences' ends).
TEST_P(CudaAttentionCache, NaiveRunsInChunksOfASmallWorkspace) {
  for (const std::vector<SeqSpec>& seqs :
       {std::vector<SeqSpec>{{300, 37}, {129, 1}, {1000, 200}, {64, 64}, {17, 5}},
        std::vector<SeqSpec>{{300, 37}, {1000, 200}, {64, 64}, {17, 5}, {90, 2}}}) {
    const AttnCase spec{8, 2, 128, 16, 0, seqs, 25};
    const Batch b(spec, GetParam());
    GpuOptions options;
    options.naive = true;
    options.workspace_bytes =
        cuda::paged_attention_workspace_bytes(3, spec.num_heads, spec.head_dim, 1000, true);
    expect_close(run_gpu(b, options).values, run_cpu(b), b, "chunked naive vs cpu");
  }
}

// Captured in a graph and replayed (programmatic launches between the decode kernels): the same
// bits as an eager call.
TEST_P(CudaAttentionCache, GraphReplayMatchesEagerCall) {
  for (bool naive : {false, true}) {
    const Batch b({32, 8, 128, 16, 0, decode_seqs({1024, 3000, 77}), 26}, GetParam());
    GpuOptions options;
    options.naive = naive;
    const GpuOutput eager = run_gpu(b, options);
    options.graph = true;
    expect_same_bits(eager, run_gpu(b, options), naive ? "naive graph" : "flash graph");
    expect_close(eager.values, run_cpu(b), b, "eager vs cpu");
  }
}

// Argument checks throw before touching the GPU, so these run without one.
cuda::PagedAttentionParams plausible_params() {
  alignas(16) static uint16_t dummy[64];
  alignas(16) static int32_t ints[4] = {0, 1, 0, 0};
  cuda::PagedAttentionParams p;
  p.q = reinterpret_cast<const __nv_bfloat16*>(dummy);
  p.cache = {DType::bf16, dummy, dummy, nullptr, nullptr};
  p.out = reinterpret_cast<__nv_bfloat16*>(dummy);
  p.block_tables = ints;
  p.block_table_stride = 1;
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
  p.head_dim = 128;
  p.q_row_stride = 48 * 128;
  return p;
}

TEST(CudaAttentionArguments, RejectsUnsupportedHeadDimAndSmallWorkspace) {
  cuda::PagedAttentionParams p = plausible_params();
  p.head_dim = 96;
  p.q_row_stride = 32 * 96;
  EXPECT_THROW(cuda::paged_attention(p, nullptr), std::invalid_argument);
  p = plausible_params();
  EXPECT_GT(cuda::paged_attention_workspace_bytes(1, 32, 128, 4096), 0u);
  EXPECT_THROW(cuda::paged_attention(p, nullptr), std::invalid_argument);  // no workspace
  // The workspace grows with the batch and the context (a buffer for the maxima serves all).
  EXPECT_LE(cuda::paged_attention_workspace_bytes(8, 32, 128, 4096),
            cuda::paged_attention_workspace_bytes(9, 32, 128, 4096));
  EXPECT_LE(cuda::paged_attention_workspace_bytes(8, 32, 128, 4096),
            cuda::paged_attention_workspace_bytes(8, 32, 128, 8192));
}

TEST(CudaAttentionArguments, RejectsCacheFormatsAndMissingScales) {
  cuda::PagedAttentionParams p = plausible_params();
  p.cache.format = DType::fp16;
  EXPECT_THROW(cuda::paged_attention(p, nullptr), std::invalid_argument);
  for (DType f : {DType::int8, DType::fp8}) {
    p.cache.format = f;
    EXPECT_THROW(cuda::paged_attention(p, nullptr), std::invalid_argument) << "no scales";
  }
}

TEST(CudaAttentionArguments, NaiveWorkspaceIsBoundedAndServesBothPaths) {
  // Llama 3 8B shapes: 2048 tokens × 32 heads × 8192 positions of fp32 would be 2 GiB; the
  // naive workspace stops at 256 MiB (the launcher then takes 256 tokens at a time).
  const size_t naive = cuda::paged_attention_workspace_bytes(2048, 32, 128, 8192, true);
  EXPECT_EQ(naive, size_t{256} << 20);
  EXPECT_GE(naive, cuda::paged_attention_workspace_bytes(2048, 32, 128, 8192, false));
  // Small batches take what they need, at least the flash path's partials.
  const size_t small = cuda::paged_attention_workspace_bytes(4, 32, 128, 1024, true);
  EXPECT_GE(small, size_t{4} * 32 * 1024 * 4);
  EXPECT_GE(small, cuda::paged_attention_workspace_bytes(4, 32, 128, 1024, false));
  // One token's rows even when they alone pass the cap (32 heads × 4M positions = 512 MiB).
  EXPECT_EQ(cuda::paged_attention_workspace_bytes(1, 32, 128, 1 << 22, true), size_t{512} << 20);
  // A naive call with a workspace under one token's rows is refused.
  cuda::PagedAttentionParams p = plausible_params();
  p.naive = true;
  alignas(16) static unsigned char scratch[64];
  p.workspace = scratch;
  p.workspace_bytes = sizeof scratch;
  EXPECT_THROW(cuda::paged_attention(p, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace inferlab::engine
#endif  // INFERLAB_ENGINE_HAVE_CUDA
