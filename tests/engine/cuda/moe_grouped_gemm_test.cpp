// The one-launch grouped GEMM of the experts (engine/cuda/moe_grouped_gemm.cu) against a CPU
// reference on the same bf16 values: every row multiplied by its own expert's weights, with
// routings that leave experts empty, give one a single row, fill a 128-row tile exactly and
// spill one row into the next, at output widths and depths that are not whole tiles. The SiLU×mul
// form equals the plain form followed by silu_mul_halves bit for bit (the same sums in the same
// order, the same roundings). Without a GPU the tests skip.
#include <gtest/gtest.h>

#include "engine/cuda_backend.hpp"

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "engine/bf16.hpp"
#include "engine/cuda/bf16_test_data.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/layer_kernels.hpp"
#include "engine/cuda/moe_kernels.hpp"

namespace inferlab::engine {
namespace {

using bf16 = __nv_bfloat16;
using cuda::DeviceBuffer;

std::vector<int32_t> offsets_of(const std::vector<int>& counts) {
  std::vector<int32_t> offsets(counts.size() + 1, 0);
  std::partial_sum(counts.begin(), counts.end(), offsets.begin() + 1);
  return offsets;
}

// rows x [slots, k] grouped by expert as `counts` says, weights [experts][out_cols, k]: the GPU's
// y against bf16(Σ in double), each value within one bf16 step (2^-7 of it at most) plus a
// thousandth of the output's scale (the fp32 sums' order differs), and no write past the slots.
// The two-stage ring (GPUs with less shared memory a block) gives the same bits as the
// three-stage one, and so does the depth the GPU picks.
void check_plain(const std::vector<int>& counts, int out_cols, int k, unsigned seed) {
  const int experts = static_cast<int>(counts.size());
  const std::vector<int32_t> offsets = offsets_of(counts);
  const int slots = offsets.back();
  const Bf16Data x = random_bf16(static_cast<size_t>(slots) * k, seed, 0.0f, 1.0f);
  const Bf16Data w = random_bf16(static_cast<size_t>(experts) * out_cols * k, seed + 1, 0.0f,
                                 1.0f / std::sqrt(static_cast<float>(k)));
  auto x_d = to_device(x.bits), w_d = to_device(w.bits);
  DeviceBuffer<int32_t> offsets_d(offsets.size());
  offsets_d.upload(offsets.data(), offsets.size());
  // One row more than the slots, filled with a sentinel (a bf16 NaN) the kernel must leave.
  auto sentinel = [](int rows, int cols) {
    return to_device(std::vector<uint16_t>(static_cast<size_t>(rows) * cols, 0x7fc1));
  };
  auto y = sentinel(slots + 1, out_cols);
  cuda::moe_grouped_gemm(x_d.data(), w_d.data(), slots, experts, out_cols, k, offsets_d.data(),
                         y.data(), nullptr, 3);
  const auto y_h = to_host(y);
  double scale = 0;
  std::vector<double> reference(static_cast<size_t>(slots) * out_cols);
  for (int e = 0; e < experts; ++e) {
    for (int p = offsets[static_cast<size_t>(e)]; p < offsets[static_cast<size_t>(e) + 1]; ++p) {
      for (int c = 0; c < out_cols; ++c) {
        const double ref = round_bf16(dot(&w.values[(static_cast<size_t>(e) * out_cols + c) * k],
                                          &x.values[static_cast<size_t>(p) * k], k));
        reference[static_cast<size_t>(p) * out_cols + c] = ref;
        scale = std::max(scale, std::abs(ref));
      }
    }
  }
  for (size_t i = 0; i < reference.size(); ++i) {
    ASSERT_LE(std::abs(y_h[i] - reference[i]), std::abs(reference[i]) / 128 + scale / 1000)
        << "row " << i / out_cols << " column " << i % out_cols;
  }
  for (int c = 0; c < out_cols; ++c) {
    ASSERT_TRUE(std::isnan(y_h[static_cast<size_t>(slots) * out_cols + c])) << "past the slots";
  }
  for (int stages : {2, 0}) {
    auto again = sentinel(slots + 1, out_cols);
    cuda::moe_grouped_gemm(x_d.data(), w_d.data(), slots, experts, out_cols, k, offsets_d.data(),
                           again.data(), nullptr, stages);
    const auto again_h = to_host(again);
    for (size_t i = 0; i < again_h.size(); ++i) {
      ASSERT_TRUE(again_h[i] == y_h[i] || (std::isnan(again_h[i]) && std::isnan(y_h[i])))
          << stages << " stages, element " << i;
    }
  }

  // The SiLU×mul form over the same rows (the weights read as [experts][2 · inter, k] with
  // inter = out_cols / 2): the plain product then silu_mul_halves, bit for bit, and nothing
  // written past the slots.
  if (out_cols % 16 != 0) return;
  const int inter = out_cols / 2;
  auto act = sentinel(slots + 1, inter);
  DeviceBuffer<bf16> act_reference(static_cast<size_t>(slots) * inter);
  cuda::moe_grouped_gemm_swiglu(x_d.data(), w_d.data(), slots, experts, inter, k, offsets_d.data(),
                                act.data(), nullptr);
  cuda::silu_mul_halves(y.data(), slots, inter, act_reference.data(), nullptr);
  auto act_h = to_host(act);
  for (int c = 0; c < inter; ++c) {
    ASSERT_TRUE(std::isnan(act_h[static_cast<size_t>(slots) * inter + c])) << "past the slots";
  }
  act_h.resize(static_cast<size_t>(slots) * inter);
  EXPECT_EQ(act_h, to_host(act_reference));
}

#define REQUIRE_GPU() \
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU"

// Empty experts, one row, a tile exactly full, a row past it, several tiles; 208 outputs (a
// partial second column tile) over 192 inputs (three k steps: the ring's depth).
TEST(MoeGroupedGemm, RowsGroupedByExpertMeetTheirOwnWeights) {
  REQUIRE_GPU();
  check_plain({0, 1, 127, 128, 129, 300, 0, 5, 256, 2}, 208, 192, 1);
}

// One k step (fewer than the ring's stages), one expert holding every row, and the last expert
// empty: the tile search's end.
TEST(MoeGroupedGemm, OneStepDeepAndOneExpertHoldingEveryRow) {
  REQUIRE_GPU();
  check_plain({0, 0, 77, 0}, 48, 64, 2);
  check_plain({3}, 16, 64, 3);
}

// Depths that are not whole k steps of 64: the last step reads zeros past k (96: one and a half
// steps; 40: less than one; 200: three and an eighth).
TEST(MoeGroupedGemm, PartialLastKStep) {
  REQUIRE_GPU();
  check_plain({5, 130, 0, 9}, 96, 96, 5);
  check_plain({17, 1}, 32, 40, 6);
  check_plain({0, 64, 200}, 144, 200, 7);
}

// Qwen3-MoE's shape of routing at a prefill: 128 experts (more than one warp's 32 in the tile
// search), uneven counts from a random-weight model's skew, 384 outputs (three column tiles,
// SiLU×mul over inter 192 in three half tiles) over 256 inputs.
TEST(MoeGroupedGemm, ManyExpertsWithSkewedCounts) {
  REQUIRE_GPU();
  std::mt19937 rng(11);
  std::vector<int> counts(128);
  for (auto& c : counts) c = rng() % 4 == 0 ? static_cast<int>(rng() % 300) : 0;
  counts[100] = 700;
  check_plain(counts, 384, 256, 4);
}

// Checked on the host before anything reaches the GPU: runs without one.
TEST(MoeGroupedGemm, ShapesItCannotCopyAndBadRingsAreRefused) {
  EXPECT_TRUE(cuda::moe_grouped_gemm_fits(200, 96));
  EXPECT_TRUE(cuda::moe_grouped_gemm_fits(8, 40));
  EXPECT_FALSE(cuda::moe_grouped_gemm_fits(200, 100));  // k rows not in 16-byte pieces
  EXPECT_FALSE(cuda::moe_grouped_gemm_fits(204, 96));   // outputs not in 8s
  EXPECT_FALSE(cuda::moe_grouped_gemm_fits(0, 96));
  EXPECT_FALSE(cuda::moe_grouped_gemm_fits(200, 0));
  EXPECT_THROW(cuda::moe_grouped_gemm(nullptr, nullptr, 4, 2, 200, 100, nullptr, nullptr, nullptr),
               std::invalid_argument);
  EXPECT_THROW(
      cuda::moe_grouped_gemm_swiglu(nullptr, nullptr, 4, 2, 100, 96, nullptr, nullptr, nullptr),
      std::invalid_argument);
  EXPECT_THROW(
      cuda::moe_grouped_gemm(nullptr, nullptr, 4, 2, 200, 96, nullptr, nullptr, nullptr, 4),
      std::invalid_argument);  // a ring of 2 or 3 stages
}

}  // namespace
}  // namespace inferlab::engine

#else

TEST(MoeGroupedGemm, NeedCuda) {
  GTEST_SKIP() << "built without CUDA";
}

#endif
