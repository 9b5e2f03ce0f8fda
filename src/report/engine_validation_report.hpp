#pragma once
// Reports of `inferlab validate --engine` and `inferlab fit --engine`.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fit/fit_engine.hpp"
#include "fit/validate_engine.hpp"

namespace inferlab {

struct EngineValidationRun {
  std::vector<std::string> files;
  std::string split;                     // all | fit | holdout
  std::vector<std::string> over_bounds;  // groups over their --max-mape bounds, in words
};

// JSON: the run, every group's accuracy, every step and class case, the notes.
nlohmann::json engine_validation_json(const EngineValidation& report,
                                      const EngineValidationRun& run);
// Text: whole steps per switch combination and phase, then the kernel classes; with
// `list_cases` every step and class case first.
std::string engine_validation_text(const EngineValidation& report, const EngineValidationRun& run,
                                   bool list_cases);
// CSV: one row per step and class case, raw numbers.
std::string engine_validation_csv(const EngineValidation& report);

// `fit --engine`: the fitted keys and step constants (the JSON is the costs file itself).
std::string engine_fit_text(const EngineFit& fit);
std::string engine_fit_csv(const EngineFit& fit);

}  // namespace inferlab
