#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "cost/cost_model.hpp"
#include "cost/delay_factors.hpp"
#include "cost/tilesim/tilesim_cost.hpp"
#include "hw/hardware_spec.hpp"
#include "util/enum_names.hpp"

namespace inferlab {

// Which cost model prices operators: the roofline with delay factors, the calibrated model,
// the tile-level simulator, or auto (calibrated where a calibration applies to the GPU,
// roofline otherwise).
enum class CostMethod { auto_, roofline, calibrated, tilesim };
inline constexpr EnumNameTable<CostMethod, 4> kCostMethodNames = {
    {{CostMethod::auto_, "auto"},
     {CostMethod::roofline, "roofline"},
     {CostMethod::calibrated, "calibrated"},
     {CostMethod::tilesim, "tilesim"}}};
inline std::string_view cost_method_name(CostMethod method) {
  return enum_name(kCostMethodNames, method);
}
// InputError "unknown cost model '<name>'; known: auto, roofline, calibrated, tilesim".
inline CostMethod parse_cost_method(std::string_view name) {
  return parse_enum(kCostMethodNames, name, "cost model");
}

// What to load. `hardware` means one thing per method: for roofline, calibrated and auto a GPU
// (a spec sheet's name or path, with the ceilings `profile` picks); for tilesim a hardware
// template of data/templates/ (which may have no spec sheet: a what-if design), `profile`,
// `delay_overrides` and `calibration` then unused.
struct CostRequest {
  std::string hardware;
  std::string profile = kProfileAuto;  // auto | none | a profile path
  CostMethod method = CostMethod::auto_;
  std::string delay_overrides;  // "class=value[,...]" applied to the delay factors
  // A calibrated GPU's name or a calibration file; empty: the GPU's own calibration, else one
  // of the same architecture moved by spec-sheet ratios (cost/calibrated/calibration_transfer).
  std::string calibration;
  // The calibrated model's sustained clock: the slowdown of compute-bound kernels under the
  // power cap (hw/sustained_clock.hpp), applied by the step predictor. Empty: the calibration's
  // own (measured on the GPU it was fitted on; a transfer carries it over). kSustainedAuto: the
  // GPU's shipped measurement (data/sustained/<hardware>.json) where there is one, else the
  // calibration's. kSustainedNone: no slowdown. Anything else: a measurement file. A measurement
  // replaces the calibration's slowdown (the fit never used it: it is set after the fit), so
  // nothing is counted twice.
  std::string sustained;
  // The inferlab engine's calibration over the model above (cost/engine/engine_cost.hpp), for
  // `--framework inferlab`: "auto" (data/engine_costs/<hardware>.json when shipped), "none" or
  // a path; empty for other frameworks.
  std::string engine_costs;
};

inline constexpr const char* kSustainedAuto = "auto";
inline constexpr const char* kSustainedNone = "none";

// The sustained clock a loaded model applies, for reports: from a measurement file, the
// calibration's own, the hardware template's (tilesim) or none.
enum class SustainedFrom { none, file, calibration, hardware_template };
inline constexpr EnumNameTable<SustainedFrom, 4> kSustainedFromNames = {
    {{SustainedFrom::none, "none"},
     {SustainedFrom::file, "file"},
     {SustainedFrom::calibration, "calibration"},
     {SustainedFrom::hardware_template, "template"}}};
inline std::string_view sustained_from_name(SustainedFrom from) {
  return enum_name(kSustainedFromNames, from);
}
struct SustainedClockUse {
  SustainedFrom from = SustainedFrom::none;
  double compute_slowdown = 1.0;  // what the step predictor applies
  std::string file;               // from file: "data/sustained/<hardware>.json" or the path given
  std::string note;               // how it was measured, or why none applies
};

struct LoadedCost {
  CostMethod method = CostMethod::roofline;  // the model loaded (auto resolved)
  HardwareSpec spec;                         // the ceilings the model prices against
  std::unique_ptr<CostModel> cost;
  DelayFactors factors;  // the roofline's (and the calibrated model's collectives')
  std::string source;    // where the model's constants come from, for reports
  // Set when the engine's calibration prices the engine's kernels (`cost` is then an
  // EngineCostModel over the model above): the file and how it was fitted.
  std::string engine_costs_source;
  SustainedClockUse sustained;
};

// InputError for unknown names, for calibrated when no calibration applies, for a missing or
// malformed sustained-clock file, and for a sustained-clock file given to a model that applies
// none (roofline, tilesim, the engine's calibration).
LoadedCost load_cost(const CostRequest& request);

// The tile-level simulator of a hardware template, as its own type (`simulate` reports where
// its time goes, which only tilesim knows).
struct LoadedTileSim {
  HardwareSpec spec;
  std::unique_ptr<TileSimCostModel> cost;
  std::string source;
};
LoadedTileSim load_tilesim(const std::string& template_name);

}  // namespace inferlab
