#include "cost/calibrated/calibration_transfer.hpp"

#include "util/data_dir.hpp"

namespace inferlab {

namespace {
using P = CalibParam;

double ratio_or_one(std::optional<double> measured, std::optional<double> sheet) {
  return measured && sheet && *sheet > 0.0 ? *measured / *sheet : 1.0;
}

// The calibration that applies to `spec`: the named one, its own, or one of the same
// architecture. Empty when none applies.
std::string pick_calibration(const HardwareSpec& spec, const std::string& requested) {
  if (!requested.empty()) return requested;
  if (has_shipped_calibration(spec.name)) return spec.name;
  for (const auto& name : calibrated_hardware()) {
    if (load_hardware(name, kProfileNone).architecture == spec.architecture) return name;
  }
  return "";
}
}  // namespace

CalibratedParams transfer_calibration(const CalibratedParams& params, const HardwareSpec& source,
                                      HardwareSpec& target) {
  CalibratedParams moved = params;
  if (!target.profile && source.profile) {
    for (int i = 0; i < kDTypeCount; ++i) {
      if (!target.peak_flops_per_s[i]) continue;
      double r = ratio_or_one(source.peak_flops_per_s[i], source.datasheet_peak_flops_per_s[i]);
      if (r == 1.0) {  // dtype not measured on the source: use its bf16 ratio
        int bf16 = static_cast<int>(DType::bf16);
        r = ratio_or_one(source.peak_flops_per_s[bf16], source.datasheet_peak_flops_per_s[bf16]);
      }
      *target.peak_flops_per_s[i] *= r;
    }
    target.memory_bandwidth_bps *=
        source.memory_bandwidth_bps / source.datasheet_memory_bandwidth_bps;
  }
  const double clock = target.boost_clock_hz / source.boost_clock_hz;
  // Streaming rates scale with the clock (L2's too), and so does the latency (in cycles) of a
  // tile's operand loads; the norm's round trip is memory latency, kept.
  for (P p : {P::attn_decode_cta_stream_bps, P::softmax_row_stream_bps, P::gemm_l2_feed_bps}) {
    moved[p] *= clock;
  }
  moved[P::gemm_operand_latency_s] /= clock;
  moved.source = params.source + "; transferred from " + source.name + " to " + target.name +
                 " by spec-sheet ratios";
  return moved;
}

std::optional<CalibratedParams> calibration_for(HardwareSpec& target,
                                                const std::string& requested) {
  const std::string chosen = pick_calibration(target, requested);
  if (chosen.empty()) return std::nullopt;
  // A path (has a slash or ends in .json) names a file; anything else a calibrated GPU.
  bool is_file = chosen.find('/') != std::string::npos ||
                 (chosen.size() > 5 && chosen.compare(chosen.size() - 5, 5, ".json") == 0);
  CalibratedParams params = load_calibrated_params_file(
      is_file ? chosen : (data_dir() / "calibrated" / (chosen + ".json")).string());
  if (params.hardware != target.name) {
    HardwareSpec source = load_hardware(params.hardware, kProfileAuto);
    params = transfer_calibration(params, source, target);
  }
  return params;
}

}  // namespace inferlab
