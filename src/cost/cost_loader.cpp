#include "cost/cost_loader.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "cost/calibrated/calibrated_cost.hpp"
#include "cost/calibrated/calibration_transfer.hpp"
#include "cost/engine/engine_cost.hpp"
#include "cost/roofline.hpp"
#include "hw/sustained_clock.hpp"
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

// A sustained-clock file named (neither empty, auto nor none).
bool names_sustained_file(const std::string& choice) {
  return !choice.empty() && choice != kSustainedAuto && choice != kSustainedNone;
}

// The sustained clock `request.sustained` picks for the calibrated model of `spec`, written into
// `params` (replacing the calibration's slowdown, noted in its source).
SustainedClockUse resolve_sustained(const std::string& choice, const HardwareSpec& spec,
                                    CalibratedParams& params) {
  auto& slowdown = params[CalibParam::sustained_compute_slowdown];
  if (choice == kSustainedNone) {
    slowdown = 1.0;
    params.source += "; sustained-compute slowdown off (--sustained none)";
    return {SustainedFrom::none, 1.0, "", "none (--sustained none)"};
  }
  std::optional<std::string> path;
  std::string shown = choice;
  if (choice == kSustainedAuto) {
    path = shipped_sustained_path(spec.name);
    shown = shipped_sustained_label(spec.name);
  } else if (!choice.empty()) {
    std::error_code ec;
    if (!std::filesystem::exists(choice, ec) && choice.find('/') == std::string::npos &&
        !choice.ends_with(".json")) {
      throw InputError("--sustained takes auto, none or a sustained-clock measurement file; '" +
                       choice + "' is none of them");
    }
    path = choice;
  }
  if (!path) {
    return {SustainedFrom::calibration, slowdown, "",
            slowdown > 1.0
                ? fmt::format("the calibration's slowdown {:.3f}, measured on {}{}", slowdown,
                              params.hardware,
                              params.hardware == spec.name ? "" : ", carried over to " + spec.name)
                : "none (the calibration of " + params.hardware + " has none)"};
  }
  const SustainedMeasurement measured = read_sustained_measurement(*path, shown);
  slowdown = measured.slowdown;
  params.source += "; sustained-compute slowdown replaced by " + measured.note;
  return {SustainedFrom::file, measured.slowdown, shown, measured.note};
}

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
  if (names_sustained_file(request.sustained)) {
    throw InputError("--sustained " + request.sustained +
                     ": the engine's calibration prices whole steps with its own clock and "
                     "applies no sustained clock; pass --engine-costs none to price with the "
                     "calibrated model");
  }
  loaded.sustained = {SustainedFrom::none, 1.0, "",
                      "none (the engine's calibration fits its own clock)"};
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
    if (!request.sustained.empty() && request.sustained != kSustainedAuto) {
      throw InputError(
          "--sustained " + request.sustained +
          " is for the calibrated cost model; the tile-level simulator takes its "
          "slowdown from the hardware template (efficiency.sustained_compute_slowdown)");
    }
    const double slowdown = loaded.cost->sustained_compute_slowdown();
    loaded.sustained = {SustainedFrom::hardware_template, slowdown, "",
                        fmt::format("{:.3f} from the hardware template {} "
                                    "(efficiency.sustained_compute_slowdown)",
                                    slowdown, request.hardware)};
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
    if (names_sustained_file(request.sustained)) {
      throw InputError("--sustained " + request.sustained +
                       " is for the calibrated cost model; the roofline model of " +
                       loaded.spec.name + " applies no sustained clock");
    }
    loaded.sustained = {SustainedFrom::none, 1.0, "", "none (the roofline model has none)"};
    loaded.method = CostMethod::roofline;
    loaded.source = loaded.factors.source;
    loaded.cost = std::make_unique<RooflineCostModel>(loaded.spec, loaded.factors);
    return loaded;
  }
  loaded.sustained = resolve_sustained(request.sustained, loaded.spec, *params);
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
