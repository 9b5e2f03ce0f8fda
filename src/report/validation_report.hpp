#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cost/cost_loader.hpp"
#include "fit/validation.hpp"

namespace inferlab {

// What a `validate` run checked, for its report.
struct ValidationRun {
  std::string data;   // the reference file or profile
  std::string split;  // all | fit | holdout
  const LoadedCost* cost = nullptr;
  std::vector<std::string> over_bounds;  // groups over their --max-mape bounds, in words
  std::string host_source;  // where the eager steps' host costs come from (HostOverhead)
};

// JSON: the run, per-group accuracy and every case (output contract of `validate`).
nlohmann::json validation_json(const ValidationReport& report, const ValidationRun& run);
// Text: every case when `list_cases`, then the per-group summary under a heading line.
std::string validation_text(const ValidationReport& report, const ValidationRun& run,
                            bool list_cases);
// CSV: one row per case, raw numbers.
std::string validation_csv(const ValidationReport& report);

}  // namespace inferlab
