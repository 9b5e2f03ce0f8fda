#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "engine/speculative.hpp"
#include "engine/speculative_bench.hpp"

namespace inferlab {

// `generate --speculative`: {drafter, k, rounds, proposed, accepted, acceptance,
// draft_passes, verify_ms, draft_ms}, added to generate's JSON as "speculative".
nlohmann::json speculative_stats_json(const engine::SpeculativeOptions& options,
                                      const engine::SpeculativeStats& stats);
std::string speculative_stats_summary(const engine::SpeculativeStats& stats);

// `bench --speculative`: the measured costs (medians with min–max, ms) and the speed-up they
// give at each acceptance rate.
nlohmann::json speculative_costs_json(const std::string& model, const std::string& draft_model,
                                      const std::string& device_name,
                                      const engine::SpeculativeOptions& options,
                                      const engine::SpeculativeCosts& costs);
std::string speculative_costs_text(const nlohmann::json& json);

}  // namespace inferlab
