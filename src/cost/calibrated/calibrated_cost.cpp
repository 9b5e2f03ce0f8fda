#include "cost/calibrated/calibrated_cost.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "cost/calibrated/gemm_tile_catalogue.hpp"
#include "util/numeric.hpp"

namespace inferlab {

namespace {
using P = CalibParam;

constexpr std::array<int64_t, 5> kSplits = {1, 2, 4, 8, 16};
constexpr int64_t kMinSliceK = 256;  // split-K slices shorter than this are not offered
// cuBLAS's own split-K choice (kernels of the fit split's F.linear shapes on the H100): it
// splits k when the output tiles fill at most half the SMs and k is longer than 2048 (seen
// split: k = 4000 ... 14336 at 16 to 64 tiles; unsplit: k = 1800 and 2048 at 8 to 64 tiles,
// and every shape of more than 66 tiles). The split then costs a reduction kernel even
// where streaming the weights once would have been as fast. (It also never split more than
// 128 token rows; holding the model to that made the fit split worse, 4.1 -> 4.6%, as the
// unaligned share then over-prices cuBLAS's narrow unsplit tiles there.)
constexpr int64_t kSplitKMinK = 2049;
constexpr int64_t kGemvMinTileColumns = 64;         // one 64-row MMA block of weights
constexpr int64_t kStreamKMinTileArea = 128 * 128;  // stream-K is used for the large tiles
constexpr double kSectorBytes = 32.0;               // the unit of L2 and HBM transfers
constexpr double kLineBytes = 128.0;                // an L2 cache line, four sectors
// The operand ring of cuBLAS's Hopper kernels, read off their names (nvjet_..._64x<stages>_...):
// k-blocks of 64 elements, at most 16 stages (64x8 tiles), and no more stages than fit in
// 213 KB of shared memory (64x64 tiles: 13 stages of 16 KB; 128x64: 8; 256x128: 4).
constexpr double kGemmKBlock = 64.0;
constexpr double kGemmMaxStages = 16.0;
constexpr double kGemmStageBudgetBytes = 13.0 * 16384.0;

// The norm kernels' launch geometry. PyTorch's vectorized_layer_norm_kernel (F.rms_norm,
// F.layer_norm): a CTA of 128 threads per row, 4 elements (8 bytes) each per memory round
// trip. vLLM's fused add+RMSNorm: a CTA of up to 1024 threads per row, one element each.
// An SM holds 2048 threads (Ampere and Hopper), so 16 or 2 such rows at once.
struct NormKernelShape {
  double elements_per_round_trip, rows_per_sm;
};
constexpr NormKernelShape kTorchNorm = {128.0 * 4.0, 2048.0 / 128.0};
constexpr NormKernelShape kFusedNorm = {1024.0, 2048.0 / 1024.0};
constexpr double kNormPasses = 2.0;  // sum of squares, then scale and write
// Longest row PyTorch's softmax gives to one warp (read off the H100 softmax grid,
// validation/data/family_reference_h100_2026-11-23.json: the time falls from 2048 to 4096
// columns, where the CTA-per-row kernel takes over).
constexpr int64_t kWarpSoftmaxMaxCols = 2048;

}  // namespace

double tile_operand_stream_bps(double tile_m, double tile_n, double element_bytes,
                               double load_latency_s) {
  const double stage_bytes = (tile_m + tile_n) * kGemmKBlock * element_bytes;
  const double stages =
      std::clamp(std::floor(kGemmStageBudgetBytes / stage_bytes), 1.0, kGemmMaxStages);
  return stages * stage_bytes / load_latency_s;
}

double overlapped_s(double compute_s, double memory_s, double exponent) {
  const double longer = std::max(compute_s, memory_s);
  if (longer <= 0.0) return 0.0;
  // Scaled by the longer part so that large exponents do not overflow.
  return longer *
         std::pow(std::pow(compute_s / longer, exponent) + std::pow(memory_s / longer, exponent),
                  1.0 / exponent);
}

double clock_dragged_s(double boost_s, double drop, double settle_s) {
  // The slowdown integrated over the run: boost_s + drop * (boost_s - settle (1 - e^-t/settle)).
  return boost_s + drop * (boost_s - settle_s * (1.0 - std::exp(-boost_s / settle_s)));
}

CalibratedCostModel::CalibratedCostModel(HardwareSpec hardware, CalibratedParams params,
                                         DelayFactors comm_factors)
    : hardware_(hardware),
      params_(std::move(params)),
      roofline_(std::move(hardware), std::move(comm_factors)) {}

GemmWavePlan CalibratedCostModel::plan_gemm(const Op& op) const {
  const auto& g = op.gemm;
  const double sms = std::max(1, hardware_.sm_count);
  const double element_bytes = dtype_bytes(op.compute_dtype);
  // Operand rows (k elements) that do not start on a 128-byte line make each tile load touch
  // lines and sectors it only partly uses; cuBLAS streams such operands at a lower rate, the
  // further off the line the lower (twins measured at k, k + 8, k + 16, k + 32 elements:
  // validation/data/alignment_pairs_h100_*.json). The tiles' operand streams run at a fitted
  // share of their rate; neither the MMA rate nor HBM traffic is touched.
  const double alignment = row_alignment_share(static_cast<double>(g.k) * element_bytes);
  const double sm_flops = matrix_peak(op.compute_dtype) / sms * params_[P::gemm_compute_efficiency];
  const double bandwidth = hardware_.memory_bandwidth_bps * params_[P::gemm_memory_efficiency];
  // The SMs' tile work and the HBM stream overlap only in part: a GEMM heavy in both (the
  // LM head at 512 tokens: 269 GFLOP and 658 MB) takes longer than either alone.
  auto overlapped = [&](double compute_s, double memory_s) {
    return overlapped_s(compute_s, memory_s, params_[P::gemm_overlap_exponent]);
  };
  auto clocked_s = [&](double boost_s) {
    return clock_dragged_s(boost_s, params_[P::gemm_clock_drop], params_[P::gemm_clock_settle_s]);
  };
  const bool k_splits = g.k >= kSplitKMinK;  // long enough for cuBLAS to split
  GemmWavePlan best;
  // Keeps the faster plan. Overlap never beats the longer part, so a plan whose longer part
  // alone is no faster than the best so far is dropped before the (costly) overlap is priced.
  auto consider = [&](GemmWavePlan& plan) {
    const double floor_s = std::max(plan.compute_s, plan.memory_s) + plan.fixed_s;
    if (best.waves != 0 && floor_s >= best.time_s) return;
    plan.time_s = overlapped(plan.compute_s, plan.memory_s) + plan.fixed_s;
    if (best.waves == 0 || plan.time_s < best.time_s) best = plan;
  };
  // The tiles cuBLAS runs (a measurement: data/calibrated/gemm_tiles/).
  for (auto [tm, tn] : cublas_gemm_tiles()) {
    // A few token rows ride on the short side of the MMA: cuBLAS covers them with one row of
    // tiles 8 or 16 rows tall and at least 64 columns wide, and where k is long enough to
    // split it gets its CTAs from split-K rather than from narrower tiles.
    if (g.m <= kGemvMaxRows && k_splits &&
        (tm < g.m || tm > kGemvMaxRows || tn < kGemvMinTileColumns)) {
      continue;
    }
    // One tile's main loop over k: its FLOPs at the SM's rate or its operands at its stream
    // rate. A CTA streams its operands through a ring of k-blocks in shared memory, as many
    // stages as fit, each in flight for the load latency (Little's law): small tiles have
    // little in flight and stream slowly (8x64: 147 KB), large ones fill shared memory.
    const double sm_stream =
        tile_operand_stream_bps(tm, tn, element_bytes, params_[P::gemm_operand_latency_s]) *
        alignment;
    // All SMs' operand loads together come out of L2 at a fitted rate. cuBLAS runs its tiles
    // in clusters of (at least) two CTAs that share the larger operand block by multicast.
    const double l2_feed = params_[P::gemm_l2_feed_bps] * alignment;
    const double l2_bytes_per_k = (std::max(tm, tn) / 2.0 + std::min(tm, tn)) * element_bytes;
    // tm and tn copied in: clang before 16 cannot capture structured bindings (sanitize preset).
    auto tile_time_s = [&, tm = tm, tn = tn](double k, double ctas_at_once) {
      return std::max({2.0 * tm * tn * k / sm_flops, (tm + tn) * k * element_bytes / sm_stream,
                       l2_bytes_per_k * k * ctas_at_once / l2_feed});
    };
    const double output_tiles =
        static_cast<double>(g.groups) * ceil_div(g.m, tm) * ceil_div(g.n, tn);
    const bool library_splits = k_splits && 2.0 * output_tiles <= sms;
    for (int64_t split : kSplits) {
      if (split == 1 && library_splits) continue;
      if (split > 1 && (!library_splits || g.k / split < kMinSliceK)) break;
      const double slice_k = ceil_div(g.k, split);
      const double ctas = output_tiles * split;
      const double waves = ceil_div(ctas, sms);
      const double tile_s = tile_time_s(slice_k, std::min(ctas, sms));
      GemmWavePlan plan;
      plan.tile_m = tm, plan.tile_n = tn, plan.split_k = split;
      plan.ctas = static_cast<int64_t>(ctas), plan.waves = static_cast<int64_t>(std::ceil(waves));
      plan.compute_s = clocked_s(waves * (tile_s + params_[P::gemm_wave_fixed_s]));
      // Split-K writes fp32 partial outputs and reads them back in the reduction kernel.
      double partial_bytes =
          split > 1 ? 2.0 * 4.0 * static_cast<double>(g.groups * g.m * g.n) * split : 0.0;
      plan.memory_s = (op.bytes() + partial_bytes) / bandwidth;
      plan.fixed_s = params_[P::gemm_fixed_s] + (split > 1 ? params_[P::splitk_reduce_s] : 0.0);
      consider(plan);
    }
    // Stream-K (Hopper's persistent kernels): when the last wave would be partly empty, the
    // k-loop iterations of all tiles are shared out evenly over the SMs, at a fitted loss of
    // tile rate and a fix-up of the tiles cut in two.
    if (tm * tn >= kStreamKMinTileArea && output_tiles > sms &&
        output_tiles / sms < ceil_div(output_tiles, sms)) {
      const double tile_s = tile_time_s(static_cast<double>(g.k), sms);
      GemmWavePlan plan;
      plan.tile_m = tm, plan.tile_n = tn, plan.split_k = 1, plan.stream_k = true;
      plan.ctas = static_cast<int64_t>(sms), plan.waves = 1;
      plan.compute_s = clocked_s(output_tiles / sms * tile_s / params_[P::gemm_streamk_efficiency] +
                                 params_[P::gemm_wave_fixed_s]);
      plan.memory_s = op.bytes() / bandwidth;
      plan.fixed_s = params_[P::gemm_fixed_s] + params_[P::gemm_streamk_fixed_s];
      consider(plan);
    }
  }
  return best;
}

double CalibratedCostModel::row_alignment_share(double row_bytes) const {
  // Rows a multiple of 128 bytes long all start on a line; of 64 bytes (not 128), every other
  // row starts 64 bytes in; of 32 bytes, rows start on sectors 32 or 96 bytes in too; any
  // other length puts rows off the 32-byte sectors, touching a further sector each.
  if (std::fmod(row_bytes, kLineBytes) == 0.0) return 1.0;
  if (std::fmod(row_bytes, kLineBytes / 2.0) == 0.0) return params_[P::gemm_offset64_efficiency];
  if (std::fmod(row_bytes, kSectorBytes) == 0.0) return params_[P::gemm_offset32_efficiency];
  return params_[P::gemm_unaligned_efficiency];
}

OpCost CalibratedCostModel::price_gemm(const Op& op, const GemmWavePlan& plan) const {
  OpCost cost;
  cost.op_class = roofline_.classify(op);
  cost.compute_s = plan.compute_s;
  cost.memory_s = plan.memory_s;
  cost.latency_s = plan.fixed_s;
  cost.ideal_s = std::max(op.flops / matrix_peak(op.compute_dtype),
                          op.bytes() / hardware_.memory_bandwidth_bps);
  cost.combine_parts();
  cost.time_s = plan.time_s;  // the parts overlap only in part (plan_gemm)
  return cost;
}

OpCost CalibratedCostModel::price_attention(const Op& op) const {
  const auto& a = op.attention;
  const double sms = std::max(1, hardware_.sm_count);
  const double peak = matrix_peak(op.compute_dtype);
  OpCost cost;
  cost.op_class = OpClass::attention;
  cost.ideal_s = std::max(op.flops / peak, op.bytes() / hardware_.memory_bandwidth_bps);
  if (a.q_len > kAttentionDecodeMaxQueryRows) {
    const double sm_flops = peak / sms * params_[P::attn_prefill_efficiency];
    const double q_tiles = ceil_div(a.q_len, kFlashPrefillQueryTile);
    const double ctas = static_cast<double>(a.batch * a.q_heads) * q_tiles;
    const double waves = ceil_div(ctas, sms);
    // The last query tile of a causal sequence sees every key: it bounds a wave's length.
    const double rows = std::min<double>(kFlashPrefillQueryTile, a.q_len);
    const double longest_flops = 4.0 * rows * static_cast<double>(a.kv_len * a.head_dim);
    const double wave_s = params_[P::attn_prefill_wave_fixed_s];
    cost.compute_s =
        std::max(waves * (op.flops / ctas / sm_flops + wave_s), longest_flops / sm_flops + wave_s);
    cost.memory_s =
        op.bytes() / (hardware_.memory_bandwidth_bps * params_[P::gemm_memory_efficiency]);
    cost.latency_s = params_[P::attn_prefill_fixed_s];
  } else {
    const double ctas = static_cast<double>(a.batch * a.kv_heads);
    const double per_cta_bytes = op.kv_bytes / std::max(1.0, ctas);
    const double stream_s =
        ceil_div(ctas, sms) * per_cta_bytes / params_[P::attn_decode_cta_stream_bps];
    cost.memory_s =
        std::max(op.bytes() / (hardware_.memory_bandwidth_bps * params_[P::attn_decode_efficiency]),
                 stream_s);
    cost.compute_s = op.flops / (peak * params_[P::attn_prefill_efficiency]);
    cost.latency_s = params_[P::attn_decode_fixed_s];
  }
  cost.combine_parts();
  return cost;
}

OpCost CalibratedCostModel::price_row_reduction(const Op& op, double efficiency, double fixed_s,
                                                double row_stream_bps, double rows_per_sm) const {
  OpCost cost = price_streaming(op, efficiency, fixed_s);
  if (op.rows > 0) {
    // Rows are reduced by CTAs of their own, `rows_per_sm` at a time on each SM: few rows
    // leave most SMs idle, long rows make each CTA's pass long.
    const double slots = std::max(1, hardware_.sm_count) * rows_per_sm;
    const double row_bytes = op.bytes() / static_cast<double>(op.rows);
    cost.memory_s = std::max(
        cost.memory_s, ceil_div(static_cast<double>(op.rows), slots) * row_bytes / row_stream_bps);
    cost.combine_parts();
  }
  return cost;
}

OpCost CalibratedCostModel::price_softmax(const Op& op) const {
  if (op.rows <= 0 || op.cols <= 0 || op.cols > kWarpSoftmaxMaxCols) {
    // One CTA per row, at a bandwidth of its own (it passes over each row more than once).
    return price_row_reduction(op, params_[P::softmax_block_efficiency],
                               params_[P::softmax_fixed_s], params_[P::softmax_row_stream_bps],
                               params_[P::softmax_rows_per_sm]);
  }
  // PyTorch gives a row of at most kWarpSoftmaxMaxCols columns to one warp, which holds it in
  // registers and walks it (max, exp and sum, scale) as one chain that grows with the columns:
  // measured on the H100, 32 rows take 5.8 us at 128 columns and 14.3 us at 2048, but 6.7 us at
  // 4096 columns on the CTA-per-row kernel. Rows beyond what the SMs hold at once wait.
  OpCost cost = price_streaming(op, params_[P::softmax_efficiency], params_[P::softmax_fixed_s]);
  const double slots = std::max(1, hardware_.sm_count) * params_[P::softmax_warp_rows_per_sm];
  const double row_chain_s = static_cast<double>(op.cols) * params_[P::softmax_warp_col_s];
  cost.memory_s =
      std::max(cost.memory_s, ceil_div(static_cast<double>(op.rows), slots) * row_chain_s);
  cost.combine_parts();
  return cost;
}

OpCost CalibratedCostModel::price_norm(const Op& op) const {
  OpCost cost = price_streaming(op, params_[P::norm_efficiency], params_[P::norm_fixed_s]);
  if (op.rows > 0 && op.cols > 0) {
    // Each row is one CTA that walks it twice, one memory round trip after the other; a few
    // rows leave the GPU waiting on that chain rather than on bandwidth, and rows beyond what
    // the SMs hold at once wait for a free slot.
    const bool fused = op.kind == OpKind::add_rmsnorm || op.kind == OpKind::add_layernorm;
    const NormKernelShape& kernel = fused ? kFusedNorm : kTorchNorm;
    const double row_chain_s =
        kNormPasses * ceil_div(static_cast<double>(op.cols), kernel.elements_per_round_trip) *
        params_[P::norm_round_trip_s];
    const double slots = std::max(1, hardware_.sm_count) * kernel.rows_per_sm;
    cost.memory_s =
        std::max(cost.memory_s, ceil_div(static_cast<double>(op.rows), slots) * row_chain_s);
    cost.combine_parts();
  }
  return cost;
}

OpCost CalibratedCostModel::price_streaming(const Op& op, double efficiency, double fixed_s) const {
  OpCost cost;
  cost.op_class = roofline_.classify(op);
  const double bandwidth = hardware_.memory_bandwidth_bps;
  cost.ideal_s = op.bytes() / bandwidth;
  cost.memory_s = op.bytes() / (bandwidth * efficiency);
  cost.latency_s = std::max(1, op.kernels) * fixed_s;
  cost.combine_parts();
  return cost;
}

OpCost CalibratedCostModel::price(const Op& op) const {
  switch (op.kind) {
    case OpKind::all_reduce:
    case OpKind::all_gather:
      return roofline_.price_collective(op);
    case OpKind::gemm:
    case OpKind::moe_gemm:
    case OpKind::attention_scores:
    case OpKind::attention_context:
      return price_gemm(op, plan_gemm(op));
    case OpKind::attention:
      return price_attention(op);
    case OpKind::rmsnorm:
    case OpKind::add_rmsnorm:
    case OpKind::layernorm:
    case OpKind::add_layernorm:
      return price_norm(op);
    case OpKind::rope:
      return price_streaming(op, params_[P::rope_efficiency], params_[P::elementwise_fixed_s]);
    case OpKind::attention_softmax:
      return price_softmax(op);
    case OpKind::sampling:  // vocabulary rows: the CTA-per-row kind of kernel
      return price_row_reduction(op, params_[P::softmax_block_efficiency],
                                 params_[P::softmax_fixed_s], params_[P::softmax_row_stream_bps],
                                 params_[P::softmax_rows_per_sm]);
    default:
      if (op.strided_input) {
        return price_streaming(op, params_[P::strided_efficiency], params_[P::strided_fixed_s]);
      }
      return price_streaming(op, params_[P::elementwise_efficiency],
                             params_[P::elementwise_fixed_s]);
  }
}

double CalibratedCostModel::isolated_time_s(const Op& op) const {
  double dirty_bytes = std::min(op.bytes(), hardware_.l2_bytes);
  int kernels = std::max(1, op.kernels);
  double in_stream_s = 0.0;
  if (op.kind == OpKind::gemm) {  // planned once: the plan is the costly part of a fit
    const GemmWavePlan plan = plan_gemm(op);
    if (plan.split_k > 1) ++kernels;  // the reduction
    in_stream_s = price_gemm(op, plan).time_s;
  } else {
    in_stream_s = price(op).time_s;
  }
  const double launch_s =
      op.kind == OpKind::rope ? params_[P::rope_isolated_launch_s] : params_[P::isolated_launch_s];
  return in_stream_s + params_[P::isolated_event_s] + (kernels - 1) * launch_s +
         params_[P::isolated_flush_fraction] * dirty_bytes / hardware_.memory_bandwidth_bps;
}

nlohmann::json CalibratedCostModel::describe(const Op& op) const {
  if (op.kind != OpKind::gemm) return nullptr;
  const GemmWavePlan plan = plan_gemm(op);
  return {{"tile_m", plan.tile_m},     {"tile_n", plan.tile_n}, {"split_k", plan.split_k},
          {"stream_k", plan.stream_k}, {"ctas", plan.ctas},     {"waves", plan.waves}};
}

}  // namespace inferlab
