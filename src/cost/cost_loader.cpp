#include "cost/cost_loader.hpp"

#include "cost/calibrated/calibrated_cost.hpp"
#include "cost/calibrated/calibration_transfer.hpp"
#include "cost/engine/engine_cost.hpp"
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

namespace {

// Wraps the loaded model in the engine's calibration when one applies (`--framework inferlab`).
LoadedCost with_engine_costs(LoadedCost loaded, const CostRequest& request) {
  if (request.engine_costs.empty()) return loaded;
  const auto path = engine_costs_path(request.engine_costs, loaded.spec.name);
  if (!path) return loaded;
  EngineCosts costs = load_engine_costs_file(*path);
  if (costs.hardware != loaded.spec.name) {
    throw InputError("engine costs '" + *path + "' were fitted on " + costs.hardware + ", not on " +
                     loaded.spec.name +
                     "; fit them for this GPU (inferlab fit "
                     "--engine) or pass --engine-costs none");
  }
  loaded.engine_costs_source = *path + ": " + costs.source;
  InStreamCollectives collectives;
  if (loaded.spec.profile) collectives = loaded.spec.profile->in_stream_collectives;
  loaded.cost = std::make_unique<EngineCostModel>(std::move(costs), std::move(loaded.cost),
                                                  std::move(collectives));
  return loaded;
}

LoadedCost load_base_cost(const CostRequest& request) {
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

}  // namespace

LoadedCost load_cost(const CostRequest& request) {
  return with_engine_costs(load_base_cost(request), request);
}

}  // namespace inferlab
