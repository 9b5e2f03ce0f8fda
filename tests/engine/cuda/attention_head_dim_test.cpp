// The CUDA paged-attention kernels at head_dim 192 and 256 (beside 64 and 128, which
// attention_test.cpp covers) against the CPU reference, for every cache format (bf16, int8,
// fp8): decode (chunked and streamed kernels, split-K), prefill and chunked prefill (the mma.sync
// kernel: the Hopper one takes 64 and 128 only), mixed batches, sliding windows, the by-token
// decode of speculative verification (table_rows), graph replay and the naive path; each case
// also checks that two runs give the same bits. And the sizes the kernels refuse.
#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "attention_test_support.hpp"
#include "engine/cuda/attention.hpp"
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

// (head_dim, cache format); names read
// CudaAttentionHeadDim/CudaAttentionHeadDimCache.<case>/HeadDim192_bf16.
class CudaAttentionHeadDimCache : public ::testing::TestWithParam<std::tuple<int, DType>> {
 protected:
  void SetUp() override {
    if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  }
  int d() const { return std::get<0>(GetParam()); }
  DType format() const { return std::get<1>(GetParam()); }
};

INSTANTIATE_TEST_SUITE_P(CudaAttentionHeadDim, CudaAttentionHeadDimCache,
                         ::testing::Combine(::testing::Values(192, 256),
                                            ::testing::Values(DType::bf16, DType::int8,
                                                              DType::fp8)),
                         [](const ::testing::TestParamInfo<std::tuple<int, DType>>& info) {
                           return "HeadDim" + std::to_string(std::get<0>(info.param)) + "_" +
                                  std::string(dtype_name(std::get<1>(info.param)));
                         });

// Two tokens worked by hand, as attention_test.cpp's HandWorkedTwoTokensPrefillAndDecode at
// head_dim 64: token 0 sees only (k0, v0) = (0, 1) and outputs 1; token 1 has q1 = 8 e0 against
// k1 = e0, a score of s = 8 / sqrt(d) (0.577 at 192, 0.5 at 256) against k0's 0, and outputs
// (1 - e^s) / (1 + e^s) = -tanh(s / 2). Tolerances as there (int8/fp8: the scale fl(1/127) or
// fl(1/448) rounded to bf16 with the weight).
TEST_P(CudaAttentionHeadDimCache, HandWorkedTwoTokensPrefillAndDecode) {
  const int d = this->d();
  const double tolerance = format() == DType::bf16 ? 2e-3 : 3e-3;
  const std::vector<float> ones(d, 1.0f), minus_ones(d, -1.0f), zeros(d, 0.0f);
  std::vector<float> q1(d, 0.0f), k1(d, 0.0f);
  q1[0] = 8.0f;
  k1[0] = 1.0f;
  const double expected1 = -std::tanh(0.5 * 8.0 / std::sqrt(static_cast<double>(d)));
  for (bool naive : {false, true}) {
    for (int query_len : {2, 1}) {  // prefill both tokens, then decode the second alone
      AttnCase spec{1, 1, d, 16, 0, {{2, query_len}}, 7};
      Batch b(spec, format());
      b.set_vector(true, b.slot(0, 0), 0, zeros);
      b.set_vector(true, b.slot(0, 1), 0, k1);
      b.set_vector(false, b.slot(0, 0), 0, ones);
      b.set_vector(false, b.slot(0, 1), 0, minus_ones);
      b.set_query(query_len - 1, 0, q1);
      GpuOptions options;
      options.naive = naive;
      const std::vector<float> out = run_gpu(b, options).values;
      for (int i = 0; i < d; ++i) {
        if (query_len == 2) {
          EXPECT_NEAR(out[static_cast<size_t>(i)], 1.0f, tolerance) << i << " naive " << naive;
        }
        EXPECT_NEAR(out[static_cast<size_t>((query_len - 1) * d + i)], expected1, tolerance)
            << i << " naive " << naive;
      }
    }
  }
}

TEST_P(CudaAttentionHeadDimCache, DecodeGroup4) {
  check_case({32, 8, d(), 16, 0, decode_seqs({1, 17, 100, 513, 1000, 64, 65}), 2}, format());
}

// Long contexts: split-K with the combine kernel, groups 1 and 3.
TEST_P(CudaAttentionHeadDimCache, DecodeLongContextsSplitK) {
  check_case({4, 4, d(), 16, 0, decode_seqs({4100, 5000, 33}), 3}, format());
  check_case({12, 4, d(), 16, 0, decode_seqs({4103, 1, 4500}), 4}, format());
}

// Group 8 (one head tile) in blocks of 32; group 16 (two head tiles); group 2.
TEST_P(CudaAttentionHeadDimCache, DecodeGroups8And16And2) {
  check_case({32, 4, d(), 32, 0, decode_seqs({2047, 40, 3000, 3, 64}), 20}, format());
  check_case({16, 1, d(), 16, 0, decode_seqs({300, 2000}), 6}, format());
  check_case({8, 4, d(), 16, 0, decode_seqs({700, 129, 2500}), 21}, format());
}

// 160 sequences: outputs written directly (one split), and a sequence without a new token.
TEST_P(CudaAttentionHeadDimCache, DecodeLargeBatchAndASequenceWithoutNewTokens) {
  std::mt19937 rng(8);
  std::vector<SeqSpec> seqs;
  for (int i = 0; i < 160; ++i) seqs.push_back({50 + static_cast<int>(rng() % 350), 1});
  check_case({16, 4, d(), 16, 0, seqs, 9}, format());
  check_case({8, 2, d(), 16, 0, {{900, 1}, {300, 0}, {2000, 1}}, 22}, format());
}

TEST_P(CudaAttentionHeadDimCache, PrefillFreshSequences) {
  check_case({8, 2, d(), 16, 0, {{70, 70}, {130, 130}, {2, 2}}, 10}, format());
  check_case({16, 2, d(), 16, 0, {{150, 150}, {300, 100}}, 23}, format());
}

// Chunked prefill: chunks after cached prefixes (query lengths off the 64-key tile), a decode
// token among them, and enough heads × query tiles for many CTAs.
TEST_P(CudaAttentionHeadDimCache, ChunkedPrefillAndMixedBatches) {
  check_case({8, 2, d(), 16, 0, {{300, 37}, {129, 1}, {1000, 200}, {64, 64}, {17, 5}}, 11},
             format());
  check_case({6, 2, d(), 16, 0, {{500, 100}, {77, 1}, {260, 130}}, 12}, format());
  check_case({32, 8, d(), 16, 0, {{600, 300}, {300, 260}, {40, 40}, {513, 257}}, 17}, format());
  check_case({4, 4, d(), 32, 0, {{200, 200}, {90, 3}, {33, 33}}, 13}, format());
}

TEST_P(CudaAttentionHeadDimCache, SlidingWindowPrefillAndDecode) {
  check_case({8, 4, d(), 16, 50, {{300, 120}, {40, 40}, {500, 1}, {130, 65}}, 14}, format());
  check_case({8, 4, d(), 16, 300, decode_seqs({2000, 45, 4200, 301}), 15}, format());
  check_case({4, 2, d(), 16, 64, {{256, 256}, {190, 2}}, 16}, format());
  check_case({8, 8, d(), 16, 700, decode_seqs({5100, 3970, 1500}), 24}, format());
}

// The backend's by-token attention (speculative verification): every token a sequence of one
// query reading its sequence's block table through table_rows, each decode kernel.
TEST_P(CudaAttentionHeadDimCache, ByTokenDecodeThroughTableRows) {
  for (const AttnCase& spec :
       {AttnCase{8, 2, d(), 16, 0, {{300, 4}, {129, 5}, {50, 3}, {2100, 2}}, 27},
        AttnCase{16, 2, d(), 16, 40, {{700, 6}, {41, 3}}, 28}}) {
    const Batch b(spec, format());
    const std::vector<float> ref = run_cpu(b);
    for (const auto kernel : {cuda::DecodeKernel::chunked, cuda::DecodeKernel::streamed}) {
      GpuOptions options;
      options.by_token = true;
      options.decode_kernel = kernel;
      const char* what = kernel == cuda::DecodeKernel::chunked ? "by token, chunked kernel"
                                                               : "by token, streamed kernel";
      const GpuOutput out = run_gpu(b, options);
      expect_close(out.values, ref, b, what);
      expect_same_bits(out, run_gpu(b, options), what);
    }
  }
}

// Captured in a graph and replayed: the same bits as an eager call.
TEST_P(CudaAttentionHeadDimCache, GraphReplayMatchesEagerCall) {
  for (bool naive : {false, true}) {
    const Batch b({16, 4, d(), 16, 0, decode_seqs({1024, 3000, 77}), 26}, format());
    GpuOptions options;
    options.naive = naive;
    const GpuOutput eager = run_gpu(b, options);
    options.graph = true;
    expect_same_bits(eager, run_gpu(b, options), naive ? "naive graph" : "flash graph");
    expect_close(eager.values, run_cpu(b), b, "eager vs cpu");
  }
}

// The naive path with a workspace for a few tokens: it walks the batch in chunks.
TEST_P(CudaAttentionHeadDimCache, NaiveRunsInChunksOfASmallWorkspace) {
  const AttnCase spec{8, 2, d(), 16, 0, {{300, 37}, {129, 1}, {1000, 200}, {17, 5}}, 25};
  const Batch b(spec, format());
  GpuOptions options;
  options.naive = true;
  options.workspace_bytes =
      cuda::paged_attention_workspace_bytes(3, spec.num_heads, spec.head_dim, 1000, true);
  expect_close(run_gpu(b, options).values, run_cpu(b), b, "chunked naive vs cpu");
}

// Argument checks throw before touching the GPU, so this runs without one.
TEST(CudaAttentionHeadDimArguments, TakesMultiplesOf64UpTo256Only) {
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
  p.num_heads = 8;
  p.num_kv_heads = 2;
  p.block_size = 16;
  p.softmax_scale = 0.1f;
  for (int head_dim : {96, 320, 32, 160, 512}) {
    p.head_dim = head_dim;
    p.q_row_stride = 12 * head_dim;
    try {
      cuda::paged_attention(p, nullptr);
      ADD_FAILURE() << "head_dim " << head_dim << " was taken";
    } catch (const std::invalid_argument& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("head_dim " + std::to_string(head_dim)), std::string::npos) << message;
      EXPECT_NE(message.find("64, 128, 192 or 256"), std::string::npos) << message;
    }
  }
  // 192 and 256 pass the head_dim check: what stops these calls is the missing workspace.
  for (int head_dim : {192, 256}) {
    p.head_dim = head_dim;
    p.q_row_stride = 12 * head_dim;
    EXPECT_GT(cuda::paged_attention_workspace_bytes(1, 8, head_dim, 4096), 0u);
    try {
      cuda::paged_attention(p, nullptr);
      ADD_FAILURE() << "head_dim " << head_dim << " ran without a workspace";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find("workspace"), std::string::npos) << error.what();
    }
  }
}

}  // namespace
}  // namespace inferlab::engine
#endif  // INFERLAB_ENGINE_HAVE_CUDA
