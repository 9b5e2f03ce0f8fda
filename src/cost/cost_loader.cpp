#include "cost/cost_loader.hpp"

#include <filesystem>

#include "util/data_dir.hpp"
#include "util/error.hpp"

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

LoadedCost load_cost(const std::string& hardware, const std::string& profile,
                     const std::string& cost, const std::string& delay_overrides,
                     const std::string& calibration) {
  if (cost != "roofline" && cost != "calibrated" && cost != "tilesim" && cost != kCostAuto) {
    throw InputError("unknown cost model '" + cost +
                     "'; known: auto, roofline, calibrated, tilesim");
  }
  LoadedCost loaded;
  if (cost == "tilesim") {
    HardwareTemplate hw = load_hardware_template(hardware);
    loaded.spec = spec_of_template(hw);
    loaded.factors = load_spec_delay_factors();
    loaded.source = "hardware template " + hw.name + " (tile-level simulation, nothing fitted)";
    auto model = std::make_unique<TileSimCostModel>(std::move(hw));
    loaded.tilesim = model.get();
    loaded.cost = std::move(model);
    return loaded;
  }
  loaded.spec = load_hardware(hardware, profile);
  loaded.factors = load_delay_factors(loaded.spec);
  if (!delay_overrides.empty()) apply_delay_factor_overrides(loaded.factors, delay_overrides);
  std::string chosen = cost == "roofline" ? "" : pick_calibration(loaded.spec, calibration);
  if (cost == "calibrated" && chosen.empty()) {
    throw InputError(
        "no calibration applies to " + loaded.spec.name + " (" + loaded.spec.architecture +
        "); calibrated GPUs: " + join_names(calibrated_hardware()) + "; use --cost roofline");
  }
  if (chosen.empty()) {
    loaded.source = loaded.factors.source;
    loaded.cost = std::make_unique<RooflineCostModel>(loaded.spec, loaded.factors);
    return loaded;
  }
  // A path (has a slash or ends in .json) names a file; anything else a calibrated GPU.
  bool is_file = chosen.find('/') != std::string::npos ||
                 (chosen.size() > 5 && chosen.compare(chosen.size() - 5, 5, ".json") == 0);
  CalibratedParams params = load_calibrated_params_file(
      is_file ? chosen : (data_dir() / "calibrated" / (chosen + ".json")).string());
  if (params.hardware != loaded.spec.name) {
    HardwareSpec source = load_hardware(params.hardware, kProfileAuto);
    params = transfer_calibration(params, source, loaded.spec);
  }
  loaded.source = params.source;
  auto model = std::make_unique<CalibratedCostModel>(loaded.spec, params, loaded.factors);
  loaded.calibrated = model.get();
  loaded.cost = std::move(model);
  return loaded;
}

}  // namespace inferlab
