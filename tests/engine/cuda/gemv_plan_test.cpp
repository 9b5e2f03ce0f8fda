// The Projector's host arithmetic, no GPU needed: how a GEMV is cut into blocks (gemv_plan.hpp)
// and how its one allocation is cut into regions (projection_workspace.hpp).
#include "engine/cuda/gemv_plan.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "engine/cuda/projection_workspace.hpp"

namespace inferlab::engine::cuda {
namespace {

constexpr int kH200Sms = 132;
constexpr int64_t kPartials = kGemvPartialCapBytes;

const std::vector<GemvKind> kKinds = {GemvKind::bf16, GemvKind::int8, GemvKind::int4, GemvKind::fp8,
                                      GemvKind::w8a8};

GemvProblem problem(GemvKind kind, int64_t rows, int64_t in, int64_t out, bool swiglu = false,
                    bool norm = false) {
  GemvProblem p;
  p.kind = kind;
  p.rows = rows;
  p.in = in;
  p.out_rows = out;
  p.group_size = 128;
  p.swiglu = swiglu;
  p.norm = norm;
  return p;
}

// What every accepted plan must satisfy for the kernel to be correct.
void expect_consistent(const GemvProblem& p, const GemvPlan& plan) {
  const GemvKindInfo info = gemv_kind_info(p.kind);
  ASSERT_TRUE(plan.ok) << plan.why;
  EXPECT_EQ(plan.slice_len % info.chunk_k, 0);
  EXPECT_GE(plan.splits * plan.slice_len, p.in);        // the slices cover the row
  EXPECT_LT((plan.splits - 1) * plan.slice_len, p.in);  // and none is empty
  EXPECT_GE(plan.batch_tiles * 8, p.rows);
  EXPECT_LT((plan.batch_tiles == 4 ? 2 : plan.batch_tiles - 1) * 8, p.rows);
  EXPECT_LE(p.rows * plan.x_stride_bytes, kGemvXBudgetBytes);
  EXPECT_EQ(plan.x_stride_bytes % 16, 0);
  EXPECT_LE(plan.smem_bytes, kGemvHeadBytes + kGemvXBudgetBytes + 32 * kGemvTileStride * 4);
  EXPECT_LE(plan.partial_bytes, kPartials);
  EXPECT_EQ(plan.partial_bytes, plan.splits > 1 ? plan.splits * p.rows * p.out_rows * 4 : 0);
  EXPECT_EQ(plan.feature_groups * plan.block_features >= plan.features, true);
  EXPECT_LE(plan.splits, 65535);
}

TEST(GemvPlan, Llama3_8bShapesFillTheGpu) {
  struct Shape {
    int64_t in, out;
    bool swiglu;
  };
  for (const Shape& s : std::vector<Shape>{{4096, 6144, false},
                                           {4096, 4096, false},
                                           {4096, 28672, true},
                                           {14336, 4096, false},
                                           {4096, 128256, false},
                                           {2048, 3072, false},
                                           {8192, 2048, false}}) {
    for (GemvKind kind : kKinds) {
      for (int64_t rows : {1, 2, 4, 8, 16, 32}) {
        const GemvProblem p = problem(kind, rows, s.in, s.out, s.swiglu);
        const GemvPlan plan = plan_gemv(p, kH200Sms, kPartials);
        SCOPED_TRACE(testing::Message() << "kind " << static_cast<int>(kind) << " rows " << rows
                                        << " " << s.in << "->" << s.out);
        expect_consistent(p, plan);
        // At one row every shape gets at least one block per SM (the small projections
        // through split-K), or each warp issues all its loads at once.
        if (rows == 1) {
          EXPECT_TRUE(plan.feature_groups * plan.splits >= kH200Sms ||
                      plan.slice_len <= kGemvLoadBatch * gemv_kind_info(kind).chunk_k);
        }
      }
    }
  }
}

TEST(GemvPlan, OProjectionSplitsK) {
  const GemvPlan plan = plan_gemv(problem(GemvKind::int4, 1, 4096, 4096), kH200Sms, kPartials);
  ASSERT_TRUE(plan.ok);
  EXPECT_EQ(plan.feature_groups, 32);
  EXPECT_EQ(plan.splits, 8);  // 32 chunks of 128 k, 4 per warp
  EXPECT_EQ(plan.slice_len, 512);
  // The LM head needs no split at one row.
  const GemvPlan head = plan_gemv(problem(GemvKind::bf16, 1, 4096, 128256), kH200Sms, kPartials);
  ASSERT_TRUE(head.ok);
  EXPECT_EQ(head.splits, 1);
  EXPECT_EQ(head.feature_groups, 1002);
}

TEST(GemvPlan, ForcedSplitsAndPrologues) {
  GemvTuning tuning;
  tuning.splits = 3;
  const GemvProblem p = problem(GemvKind::bf16, 4, 640, 300, false, true);
  const GemvPlan plan = plan_gemv(p, kH200Sms, kPartials, tuning);
  expect_consistent(p, plan);
  EXPECT_EQ(plan.splits, 3);  // 20 chunks: slices of 7, 7, 6
  EXPECT_EQ(plan.slice_len, 7 * 32);
  tuning.prologue = GemvPrologue::prepared;
  EXPECT_TRUE(plan_gemv(p, kH200Sms, kPartials, tuning).prepared);
  tuning.prologue = GemvPrologue::fused;
  EXPECT_FALSE(plan_gemv(p, kH200Sms, kPartials, tuning).prepared);
  // Without a transform there is nothing to prepare.
  tuning.prologue = GemvPrologue::prepared;
  EXPECT_FALSE(
      plan_gemv(problem(GemvKind::bf16, 4, 640, 300), kH200Sms, kPartials, tuning).prepared);
  // Automatic: one row of the QKV projection normalises in the kernel; 32 rows of fp8 with
  // the norm (every block reading 32 rows twice) prepare once.
  EXPECT_FALSE(
      plan_gemv(problem(GemvKind::bf16, 1, 4096, 6144, false, true), kH200Sms, kPartials).prepared);
  EXPECT_TRUE(
      plan_gemv(problem(GemvKind::fp8, 32, 4096, 6144, false, true), kH200Sms, kPartials).prepared);
}

TEST(GemvPlan, RefusesWhatTheKernelCannotDo) {
  const auto refused = [](const GemvProblem& p) { return !plan_gemv(p, kH200Sms, kPartials).ok; };
  EXPECT_TRUE(refused(problem(GemvKind::bf16, 0, 4096, 4096)));
  EXPECT_TRUE(refused(problem(GemvKind::bf16, 33, 4096, 4096)));
  EXPECT_TRUE(refused(problem(GemvKind::bf16, 1, 4104, 4096)));        // not a multiple of 32
  EXPECT_TRUE(refused(problem(GemvKind::int8, 1, 4128, 4096)));        // not a multiple of 64
  EXPECT_TRUE(refused(problem(GemvKind::bf16, 1, 4096, 4095, true)));  // odd gate/up
  GemvProblem p = problem(GemvKind::int4, 1, 4096, 4096);
  p.group_size = 96;
  EXPECT_TRUE(refused(p));
  p.group_size = 32;
  EXPECT_FALSE(refused(p));
  p.rows = 9;
  EXPECT_TRUE(refused(p));  // groups of 32: 8 rows at most
  p.group_size = 64;
  EXPECT_FALSE(refused(p));
  p.rows = 17;
  EXPECT_TRUE(refused(p));  // groups of 64: 16 rows at most
  p.group_size = 256;
  EXPECT_FALSE(refused(p));
  // Partial sums that do not fit the scratch (Llama 3 70B's LM head at 32 rows: 7 slices).
  EXPECT_FALSE(plan_gemv(problem(GemvKind::bf16, 32, 8192, 128256), kH200Sms, kPartials).ok);
}

TEST(GemvPlan, EveryAcceptedPlanIsConsistent) {
  for (GemvKind kind : kKinds) {
    for (int64_t in : {32, 64, 128, 256, 640, 1152, 4096, 14336, 28672}) {
      for (int64_t out : {1, 8, 72, 300, 4096, 6144}) {
        for (int64_t rows = 1; rows <= kGemvMaxRows; ++rows) {
          for (bool swiglu : {false, true}) {
            if (swiglu && out % 2 != 0) continue;
            const GemvProblem p = problem(kind, rows, in, out, swiglu);
            const GemvPlan plan = plan_gemv(p, kH200Sms, kPartials);
            if (in % gemv_kind_info(kind).chunk_k != 0 || (kind == GemvKind::int4 && in < 128)) {
              EXPECT_FALSE(plan.ok);
              continue;
            }
            SCOPED_TRACE(testing::Message() << "kind " << static_cast<int>(kind) << " rows " << rows
                                            << " " << in << "->" << out);
            expect_consistent(p, plan);
          }
        }
      }
    }
  }
}

TEST(ProjectionWorkspace, RegionsTileTheAllocation) {
  for (DType format : {DType::bf16, DType::int8, DType::int4, DType::fp8}) {
    for (DType input : {DType::bf16, DType::int8, DType::fp8}) {
      GemvKind kind;
      if (!gemv_kind_for(format, input, &kind)) continue;
      const ProjectionWorkspace w = projection_workspace(4096, 14336, 128256, format, input);
      const std::vector<std::pair<int64_t, int64_t>> regions = {
          {w.lt_offset, w.lt_bytes},
          {w.counters_offset, w.counters_bytes},
          {w.partials_offset, w.partials_bytes},
          {w.rows_offset, w.rows_bytes},
          {w.scales_offset, w.scales_bytes},
          {w.dequant_offset, w.dequant_bytes},
          {w.acc_offset, w.acc_bytes}};
      int64_t at = 0;
      for (const auto& [offset, bytes] : regions) {
        EXPECT_EQ(offset, at);
        EXPECT_EQ(offset % 256, 0);
        at += bytes;
      }
      EXPECT_EQ(w.total_bytes, at);
      const bool weight_only =
          (format == DType::int8 || format == DType::int4) && input == DType::bf16;
      EXPECT_EQ(w.dequant_bytes > 0, weight_only);
      EXPECT_LE(w.dequant_bytes, kChunkCapBytes + 64 * 14336 * 2);
      EXPECT_EQ(w.acc_bytes > 0, input != DType::bf16);
      EXPECT_LE(w.acc_bytes, kChunkCapBytes + 16 * 128256 * 4);
      EXPECT_EQ(w.counters_bytes, ((128256 + 63) / 64 * 4 + 255) / 256 * 256);
      EXPECT_EQ(w.partials_bytes, kGemvPartialCapBytes);
      EXPECT_EQ(w.rows_bytes, input == DType::bf16 ? 32 * 14336 * 2 : 4096 * 14336);
    }
  }
  // With few rows a quantized-input Projector still holds normed bf16 rows for a GEMV of a
  // bf16 matrix (2 bytes an element, against 1 for codes).
  const ProjectionWorkspace few = projection_workspace(16, 4096, 4096, DType::fp8, DType::fp8);
  EXPECT_EQ(few.rows_bytes, 16 * 4096 * 2);
  // A small Projector stays small: the GEMV scratch scales with its sizes.
  const ProjectionWorkspace small = projection_workspace(4, 256, 72, DType::bf16, DType::bf16);
  EXPECT_EQ(small.partials_bytes, (4 * 72 * 4 * 16 + 255) / 256 * 256);
  EXPECT_EQ(small.total_bytes - small.lt_bytes,
            small.counters_bytes + small.partials_bytes + small.rows_bytes);
}

}  // namespace
}  // namespace inferlab::engine::cuda
