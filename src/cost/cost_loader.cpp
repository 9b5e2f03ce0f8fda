#include "cost/cost_loader.hpp"

#include "cost/calibrated/calibrated_cost.hpp"
#include "cost/calibrated/calibration_transfer.hpp"
#include "cost/roofline.hpp"
#include "util/error.hpp"

namespace inferlab {

LoadedTileSim load_tilesim(const std::string& template_name) {
  HardwareTemplate hw = load_hardware_template(template_name);
  LoadedTileSim loaded;
  loaded.spec = spec_of_template(hw);
  loaded.source = "hardware template " + hw.name + " (tile-level simulation, nothing fitted)";
  loaded.cost = std::make_unique<TileSimCostModel>(std::move(hw));
  return loaded;
}

LoadedCost load_cost(const CostRequest& request) {
  LoadedCost loaded;
  if (request.method == CostMethod::tilesim) {
    LoadedTileSim tilesim = load_tilesim(request.hardware);
    loaded.method = CostMethod::tilesim;
    loaded.spec = std::move(tilesim.spec);
    loaded.factors = load_spec_delay_factors();
    loaded.source = std::move(tilesim.source);
    loaded.cost = std::move(tilesim.cost);
    return loaded;
  }
  loaded.spec = load_hardware(request.hardware, request.profile);
  loaded.factors = load_delay_factors(loaded.spec);
  if (!request.delay_overrides.empty()) {
    apply_delay_factor_overrides(loaded.factors, request.delay_overrides);
  }
  std::optional<CalibratedParams> params;
  if (request.method != CostMethod::roofline) {
    params = calibration_for(loaded.spec, request.calibration);
  }
  if (request.method == CostMethod::calibrated && !params) {
    throw InputError(
        "no calibration applies to " + loaded.spec.name + " (" + loaded.spec.architecture +
        "); calibrated GPUs: " + join_names(calibrated_hardware()) + "; use --cost roofline");
  }
  if (!params) {
    loaded.method = CostMethod::roofline;
    loaded.source = loaded.factors.source;
    loaded.cost = std::make_unique<RooflineCostModel>(loaded.spec, loaded.factors);
    return loaded;
  }
  if (request.sustained_compute_slowdown > 0.0) {
    (*params)[CalibParam::sustained_compute_slowdown] = request.sustained_compute_slowdown;
    params->source += "; sustained-compute slowdown replaced by " + request.sustained_note;
  }
  loaded.method = CostMethod::calibrated;
  loaded.source = params->source;
  loaded.cost = std::make_unique<CalibratedCostModel>(loaded.spec, *params, loaded.factors);
  return loaded;
}

}  // namespace inferlab
