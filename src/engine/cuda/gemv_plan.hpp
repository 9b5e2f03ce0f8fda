#pragma once
// How a projection's GEMV is cut into thread blocks: pure host arithmetic (C++17, no CUDA
// includes), shared by the Projector and the CPU-only tests.
//
// The kernels (gemv_kernel.cuh) run each warp over 16 output features (one mma M tile) and one
// slice of the input dimension; a block is 8 warps, 128 features (64 gate + 64 up features for
// SwiGLU), all on the same k slice, whose input rows sit in shared memory. The grid is
// (feature groups) x (k slices). With more than one slice the blocks write fp32 (int32 for
// W8A8) partial sums and the last block of a feature group to arrive adds them up in slice
// order (deterministic), so small projections (O, down: 4096 features = 32 groups) still put
// ~2 blocks on every SM.
#include <algorithm>
#include <cstdint>

#include "util/dtype.hpp"

namespace inferlab::engine::cuda {

// The GEMV kernel families: weight format x input format.
enum class GemvKind { bf16, int8, int4, fp8, w8a8 };

constexpr int kGemvThreads = 256;  // 8 warps per block
constexpr int kGemvWarps = 8;
constexpr int kGemvMaxRows = 32;     // 4 mma N tiles of 8 rows
constexpr int kGemvLoadBatch = 4;    // 64-byte row chunks loaded per warp before the first use
constexpr int kGemvChunkBytes = 64;  // bytes of one weight row a quad of lanes reads per chunk
// Shared memory: a fixed head (row statistics, reduction scratch), the staged input slice,
// and the block's output tile [rows][kGemvTileStride] of fp32.
constexpr int64_t kGemvHeadBytes = 8192;
constexpr int64_t kGemvTileStride = 132;  // floats per tile row: 128 features + 4 (no conflicts)
constexpr int64_t kGemvXBudgetBytes = 80 * 1024;  // staged input: 2 blocks fit in 228 KB per SM

struct GemvKindInfo {
  int chunk_k;           // input elements per 64-byte chunk of a weight row
  int x_bytes;           // bytes per staged input element (bf16, fp16 for fp8, int8)
  double weight_bytes;   // per weight element
  bool quantized_input;  // fp8 and W8A8 quantize each input row (absmax per row)
};

constexpr GemvKindInfo gemv_kind_info(GemvKind kind) {
  switch (kind) {
    case GemvKind::bf16:
      return {32, 2, 2.0, false};
    case GemvKind::int8:
      return {64, 2, 1.0, false};
    case GemvKind::int4:
      return {128, 2, 0.5, false};
    case GemvKind::fp8:
      return {64, 2, 1.0, true};
    case GemvKind::w8a8:
      return {64, 1, 1.0, true};
  }
  return {32, 2, 2.0, false};
}

// (weight format, input format) → kernel family; false for pairs the engine does not run.
inline bool gemv_kind_for(DType format, DType input_format, GemvKind* kind) {
  if (format == DType::bf16 && input_format == DType::bf16) return *kind = GemvKind::bf16, true;
  if (format == DType::int8 && input_format == DType::bf16) return *kind = GemvKind::int8, true;
  if (format == DType::int4 && input_format == DType::bf16) return *kind = GemvKind::int4, true;
  if (format == DType::fp8 && input_format == DType::fp8) return *kind = GemvKind::fp8, true;
  if (format == DType::int8 && input_format == DType::int8) return *kind = GemvKind::w8a8, true;
  return false;
}

// Where the transformed input (RMSNorm and/or per-row quantization) comes from.
enum class GemvPrologue {
  automatic,  // in the kernel while it costs less than half the weight bytes in L2 reads
  fused,      // always in the kernel: every block reads its rows whole
  prepared,   // a small kernel writes the rows once; the GEMV stages its slices from there
};

// A/B knobs (env INFERLAB_ENGINE_GEMV_SPLITS, INFERLAB_ENGINE_GEMV_PROLOGUE; tests).
struct GemvTuning {
  int64_t splits = 0;  // k slices; 0 chooses
  GemvPrologue prologue = GemvPrologue::automatic;
};

struct GemvProblem {
  GemvKind kind = GemvKind::bf16;
  int64_t rows = 0, in = 0, out_rows = 0;  // out_rows: weight rows (2 I for SwiGLU)
  int64_t group_size = 0;                  // int4
  bool swiglu = false;
  bool norm = false;  // RMSNorm prologue
};

struct GemvPlan {
  bool ok = false;
  const char* why = "";    // when !ok
  int batch_tiles = 0;     // mma N tiles of 8 rows: 1, 2 or 4
  int group_split = 1;     // int4: 128 / group_size when the group is 32 or 64
  int64_t features = 0;    // outputs per row (out_rows, or I for SwiGLU)
  int block_features = 0;  // 128, or 64 for SwiGLU
  int64_t feature_groups = 0, splits = 0, slice_len = 0;
  bool prepared = false;  // the input goes through the prepare kernel first
  int64_t x_stride_bytes = 0, smem_bytes = 0;
  int64_t partial_bytes = 0;  // splits x rows x out_rows x 4 when splits > 1
};

namespace detail {
inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
inline GemvPlan refuse(const char* why) {
  GemvPlan plan;
  plan.why = why;
  return plan;
}
}  // namespace detail

// The launch shape of one GEMV. partial_capacity_bytes: the Projector's split-K scratch;
// sm_count: multiprocessors of the device (blocks are sized for 2 per SM).
inline GemvPlan plan_gemv(const GemvProblem& p, int sm_count, int64_t partial_capacity_bytes,
                          const GemvTuning& tuning = {}) {
  using detail::ceil_div;
  const GemvKindInfo info = gemv_kind_info(p.kind);
  if (p.rows < 1 || p.rows > kGemvMaxRows) return detail::refuse("rows outside 1-32");
  if (p.in < info.chunk_k || p.in % info.chunk_k != 0) {
    return detail::refuse("the input width is not a multiple of the kernel's 64-byte chunk");
  }
  if (p.in > (int64_t{1} << 28) || p.out_rows < 1 || p.out_rows > (int64_t{1} << 28)) {
    return detail::refuse("shape too large for 32-bit indexing");
  }
  if (p.swiglu && p.out_rows % 2 != 0) return detail::refuse("SwiGLU needs an even row count");
  GemvPlan plan;
  if (p.kind == GemvKind::int4) {
    if (p.group_size <= 0 || p.in % p.group_size != 0) return detail::refuse("int4 groups");
    if (p.group_size % 128 == 0) {
      plan.group_split = 1;
    } else if (p.group_size == 64 || p.group_size == 32) {
      plan.group_split = static_cast<int>(128 / p.group_size);
    } else {
      return detail::refuse("int4 group size is not 32, 64 or a multiple of 128");
    }
  }
  plan.batch_tiles = p.rows <= 8 ? 1 : p.rows <= 16 ? 2 : 4;
  // Each group of a chunk keeps its own accumulators: registers allow 16 rows with groups of
  // 64 and 8 with groups of 32.
  if (plan.group_split * plan.batch_tiles > 4) {
    return detail::refuse("int4 groups of 64 take at most 16 rows, of 32 at most 8");
  }
  plan.features = p.swiglu ? p.out_rows / 2 : p.out_rows;
  plan.block_features = p.swiglu ? 64 : 128;
  plan.feature_groups = ceil_div(plan.features, plan.block_features);

  const int64_t chunks = p.in / info.chunk_k;
  const double weight_bytes = static_cast<double>(p.out_rows) * p.in * info.weight_bytes;
  const int64_t partial_per_split = p.rows * p.out_rows * 4;
  // Fewest slices for the staged input to fit in shared memory.
  int64_t splits_min = ceil_div(p.rows * p.in * info.x_bytes, kGemvXBudgetBytes);
  int64_t splits;
  if (tuning.splits > 0) {
    splits = tuning.splits;
  } else {
    // ~2 blocks per SM (one wave: each block has 8 warps x 4 KB of weights in flight, 64 KB per
    // SM, 3x what Little's law asks for at 4.8 TB/s), each warp with at least one full load batch,
    // and the partial sums (written and read once) under 1/8 of the weight bytes.
    splits = ceil_div(2 * int64_t{sm_count}, plan.feature_groups);
    splits = std::min(splits, std::max<int64_t>(1, chunks / kGemvLoadBatch));
    const auto traffic_cap = static_cast<int64_t>(weight_bytes / (8.0 * partial_per_split));
    splits = std::min(splits, std::max<int64_t>(1, traffic_cap));
  }
  splits = std::clamp<int64_t>(std::max(splits, splits_min), 1, chunks);
  int64_t slice_chunks = ceil_div(chunks, splits);
  // The slice (rounded up to whole chunks) must still fit.
  while (slice_chunks > 1 &&
         p.rows * (slice_chunks * info.chunk_k * info.x_bytes + 16) > kGemvXBudgetBytes) {
    --slice_chunks;
  }
  splits = ceil_div(chunks, slice_chunks);
  plan.splits = splits;
  plan.slice_len = slice_chunks * info.chunk_k;
  plan.x_stride_bytes = plan.slice_len * info.x_bytes + 16;
  if (p.rows * plan.x_stride_bytes > kGemvXBudgetBytes) {
    return detail::refuse("the input rows do not fit in shared memory");
  }
  if (splits > 65535) return detail::refuse("too many k slices");
  plan.partial_bytes = splits > 1 ? splits * partial_per_split : 0;
  if (plan.partial_bytes > partial_capacity_bytes) {
    return detail::refuse("the split-K partial sums exceed the scratch");
  }
  const bool transform = p.norm || info.quantized_input;
  if (transform) {
    switch (tuning.prologue) {
      case GemvPrologue::fused:
        plan.prepared = false;
        break;
      case GemvPrologue::prepared:
        plan.prepared = true;
        break;
      case GemvPrologue::automatic: {
        // Every block reads its rows whole once per pass (norm, absmax): L2 traffic that runs
        // beside the weight stream; past half the weight bytes one prepare launch is cheaper.
        const int passes = (p.norm ? 1 : 0) + (info.quantized_input ? 1 : 0);
        const double prologue_bytes =
            static_cast<double>(plan.feature_groups * splits) * p.rows * p.in * 2.0 * passes;
        plan.prepared = prologue_bytes > weight_bytes / 2;
        break;
      }
    }
  }
  plan.smem_bytes = kGemvHeadBytes + p.rows * plan.x_stride_bytes + p.rows * kGemvTileStride * 4;
  plan.ok = true;
  return plan;
}

}  // namespace inferlab::engine::cuda
