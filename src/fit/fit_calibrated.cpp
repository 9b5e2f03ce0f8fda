#include "fit/fit_calibrated.hpp"

#include <cmath>

#include "util/error.hpp"
#include "util/nelder_mead.hpp"

namespace inferlab {

namespace {
using P = CalibParam;

std::vector<P> params_of(CalibGroup group) {
  switch (group) {
    case CalibGroup::elementwise:
      return {P::elementwise_efficiency, P::elementwise_fixed_s, P::isolated_launch_s};
    case CalibGroup::rope:
      return {P::rope_efficiency, P::rope_isolated_launch_s};
    case CalibGroup::strided_elementwise:  // the launch wait is the elementwise group's
      return {P::strided_efficiency, P::strided_fixed_s};
    case CalibGroup::norm:
      return {P::norm_efficiency, P::norm_fixed_s, P::norm_round_trip_s};
    case CalibGroup::softmax:
      return {P::softmax_efficiency,      P::softmax_fixed_s,    P::softmax_row_stream_bps,
              P::softmax_rows_per_sm,     P::softmax_warp_col_s, P::softmax_warp_rows_per_sm,
              P::softmax_block_efficiency};
    case CalibGroup::attention_prefill:
      return {P::attn_prefill_efficiency, P::attn_prefill_fixed_s, P::attn_prefill_wave_fixed_s};
    case CalibGroup::attention_decode:
      return {P::attn_decode_efficiency, P::attn_decode_fixed_s, P::attn_decode_cta_stream_bps};
    case CalibGroup::gemm:
      return {P::gemm_compute_efficiency,   P::gemm_operand_latency_s,
              P::gemm_memory_efficiency,    P::gemm_fixed_s,
              P::gemm_wave_fixed_s,         P::splitk_reduce_s,
              P::gemm_streamk_efficiency,   P::gemm_streamk_fixed_s,
              P::gemm_unaligned_efficiency, P::gemm_clock_drop,
              P::gemm_clock_settle_s,       P::gemm_overlap_exponent,
              P::gemm_l2_feed_bps,          P::gemm_offset32_efficiency,
              P::gemm_offset64_efficiency,  P::isolated_flush_fraction};
  }
  return {};
}

// Fits one group's free parameters to its non-held-out points (least squares of the log
// ratio, so that a 2 us op counts as much as a 2 ms one), the others held at `params`.
CalibGroupFit fit_group(const HardwareSpec& hardware, const DelayFactors& comm_factors,
                        const std::vector<MeasuredOp>& measured, CalibGroup group,
                        CalibratedParams& params) {
  std::vector<const MeasuredOp*> points;
  for (const auto& m : measured) {
    if (!m.held_out && m.measured_s > 0.0 && calib_group_of(m.op) == group) points.push_back(&m);
  }
  CalibGroupFit summary{group};
  summary.points = static_cast<int>(points.size());
  if (points.empty()) return summary;
  const std::vector<P> free = params_of(group);
  auto with = [&](const std::vector<double>& log_values) {
    CalibratedParams p = params;
    for (size_t i = 0; i < free.size(); ++i) {
      const auto& info = calib_param_info(free[i]);
      p[free[i]] = std::clamp(std::exp(log_values[i]), info.min, info.max);
    }
    return p;
  };
  auto objective = [&](const std::vector<double>& log_values) {
    CalibratedCostModel model(hardware, with(log_values), comm_factors);
    double sum = 0.0;
    for (const MeasuredOp* m : points) {
      double r = std::log(model.isolated_time_s(m->op) / m->measured_s);
      sum += r * r;
    }
    return sum / static_cast<double>(points.size());
  };
  std::vector<double> start;
  for (P p : free) start.push_back(std::log(std::max(params[p], 1e-9)));
  MinimizeResult best = minimize_nelder_mead(objective, start, 0.5, 4000, 3);
  params = with(best.x);
  CalibratedCostModel model(hardware, params, comm_factors);
  for (const MeasuredOp* m : points) {
    summary.mape += std::fabs(model.isolated_time_s(m->op) / m->measured_s - 1.0);
  }
  summary.mape /= static_cast<double>(points.size());
  summary.evaluations = best.evaluations;
  return summary;
}
}  // namespace

std::string_view calib_group_name(CalibGroup group) {
  switch (group) {
    case CalibGroup::elementwise:
      return "elementwise";
    case CalibGroup::norm:
      return "norm";
    case CalibGroup::softmax:
      return "softmax";
    case CalibGroup::attention_prefill:
      return "attention_prefill";
    case CalibGroup::attention_decode:
      return "attention_decode";
    case CalibGroup::gemm:
      return "gemm";
    case CalibGroup::rope:
      return "rope";
    case CalibGroup::strided_elementwise:
      return "strided_elementwise";
  }
  return "?";
}

CalibGroup calib_group_of(const Op& op) {
  switch (op.kind) {
    case OpKind::gemm:
    case OpKind::moe_gemm:
    case OpKind::attention_scores:
    case OpKind::attention_context:
      return CalibGroup::gemm;
    case OpKind::attention:
      return op.attention.q_len > kAttentionDecodeMaxQueryRows ? CalibGroup::attention_prefill
                                                               : CalibGroup::attention_decode;
    case OpKind::rmsnorm:
    case OpKind::add_rmsnorm:
    case OpKind::layernorm:
    case OpKind::add_layernorm:
      return CalibGroup::norm;
    case OpKind::attention_softmax:
    case OpKind::sampling:
      return CalibGroup::softmax;
    case OpKind::rope:
      return CalibGroup::rope;
    default:
      return op.strided_input ? CalibGroup::strided_elementwise : CalibGroup::elementwise;
  }
}

CalibratedFit fit_calibrated(const HardwareSpec& hardware, const DelayFactors& comm_factors,
                             const std::vector<MeasuredOp>& measured, double isolated_floor_s) {
  CalibratedFit fit;
  fit.params = initial_calibrated_params();
  fit.params.hardware = hardware.name;
  fit.params.ceilings = hardware.ceiling_source();
  // Ops timed alone cannot tell a kernel's fixed in-stream cost from the event overhead around
  // it, so the overhead is measured instead: the fastest op timed alone (a tiny kernel) minus
  // what a tiny kernel costs inside a graph (the probe's small kernel in a graph).
  if (hardware.profile && hardware.profile->graph_small_kernel_s > 0.0 && isolated_floor_s > 0.0) {
    fit.params[P::isolated_event_s] =
        std::max(0.0, isolated_floor_s - hardware.profile->graph_small_kernel_s);
  }
  // Groups share a few parameters (the GEMM group fits the flush write-back every op timed
  // alone pays; the elementwise group the launch wait of an op's further kernels), so the
  // groups are fitted in turn twice: the second round sees the shared values the first settled.
  constexpr int kRounds = 2;
  for (int round = 0; round < kRounds; ++round) {
    fit.groups.clear();
    for (CalibGroup group :
         {CalibGroup::gemm, CalibGroup::elementwise, CalibGroup::norm, CalibGroup::softmax,
          CalibGroup::attention_prefill, CalibGroup::attention_decode, CalibGroup::rope,
          CalibGroup::strided_elementwise}) {
      fit.groups.push_back(fit_group(hardware, comm_factors, measured, group, fit.params));
    }
  }
  return fit;
}

}  // namespace inferlab
