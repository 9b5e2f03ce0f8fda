#include "report/speculative_report.hpp"

#include <fmt/format.h>

#include "report/engine_bench_report.hpp"

namespace inferlab {

namespace {
const char* drafter_name(engine::SpeculativeOptions::Drafter drafter) {
  return drafter == engine::SpeculativeOptions::Drafter::model ? "model" : "ngram";
}

}  // namespace

nlohmann::json speculative_stats_json(const engine::SpeculativeOptions& options,
                                      const engine::SpeculativeStats& stats) {
  return {{"drafter", drafter_name(options.drafter)},
          {"k", options.k},
          {"rounds", stats.rounds},
          {"proposed", stats.proposed},
          {"accepted", stats.accepted},
          {"acceptance", stats.acceptance()},
          {"draft_passes", stats.draft_passes},
          {"verify_ms", stats.verify_s * 1e3},
          {"draft_ms", stats.draft_s * 1e3}};
}

std::string speculative_stats_summary(const engine::SpeculativeStats& stats) {
  return fmt::format(
      "speculation: {} rounds, {} of {} draft tokens accepted ({:.1f}%), verify {:.1f} ms, "
      "draft {:.1f} ms\n",
      stats.rounds, stats.accepted, stats.proposed, 100.0 * stats.acceptance(),
      stats.verify_s * 1e3, stats.draft_s * 1e3);
}

nlohmann::json speculative_costs_json(const std::string& model, const std::string& draft_model,
                                      const std::string& device_name,
                                      const engine::SpeculativeOptions& options,
                                      const engine::SpeculativeCosts& costs) {
  nlohmann::json speedups = nlohmann::json::array();
  for (const auto& [acceptance, speedup] : costs.speedup_at_acceptance) {
    speedups.push_back({{"acceptance", acceptance}, {"speedup", speedup}});
  }
  return {{"model", model},
          {"draft_model", draft_model},
          {"drafter", drafter_name(options.drafter)},
          {"device_name", device_name},
          {"k", costs.k},
          {"context_tokens", costs.context_tokens},
          {"device_timed", costs.device_timed},
          {"decode_step", timing_stats_json(costs.decode_step)},
          {"verify", timing_stats_json(costs.verify)},
          {"draft_step", timing_stats_json(costs.draft_step)},
          {"host_wall",
           {{"decode_step", timing_stats_json(costs.decode_step_wall)},
            {"verify", timing_stats_json(costs.verify_wall)},
            {"draft_step", timing_stats_json(costs.draft_step_wall)}}},
          {"rounds",
           costs.round_wall.samples == 0
               ? nlohmann::json(nullptr)
               : nlohmann::json{{"round_wall", timing_stats_json(costs.round_wall)},
                                {"verify", timing_stats_json(costs.verify_in_round)},
                                {"verify_wall", timing_stats_json(costs.verify_in_round_wall)}}},
          {"verify_over_decode", costs.verify.median_s / costs.decode_step.median_s},
          {"draft_over_decode", costs.draft_step.median_s / costs.decode_step.median_s},
          {"speedup_at_acceptance", speedups}};
}

std::string speculative_costs_text(const nlohmann::json& j) {
  auto line = [&](const char* name, const nlohmann::json& t) {
    return fmt::format("  {:<38} {:>9.3f} ms  ({:.3f}–{:.3f}, {} samples)\n", name,
                       t["median_ms"].get<double>(), t["min_ms"].get<double>(),
                       t["max_ms"].get<double>(), t["samples"].get<int64_t>());
  };
  const auto k = j["k"].get<int64_t>();
  std::string out = fmt::format(
      "Speculative decoding costs: {} on {} (draft: {}), context {} tokens, k = {}, {}\n",
      j["model"].get<std::string>(), j["device_name"].get<std::string>(),
      j["drafter"] == "model" ? j["draft_model"].get<std::string>() : std::string("n-gram lookup"),
      j["context_tokens"].get<int64_t>(), k,
      j["device_timed"].get<bool>() ? "GPU time (CUDA events)" : "host wall time");
  out += line("target decode step (1 token)", j["decode_step"]);
  out += line(fmt::format("target verify ({} tokens, all logits)", k + 1).c_str(), j["verify"]);
  out += line(j["drafter"] == "model" ? "draft decode step" : "n-gram lookup", j["draft_step"]);
  if (j.contains("host_wall") && j["device_timed"].get<bool>()) {
    const auto& w = j["host_wall"];
    out += fmt::format(
        "  host wall per pass, call to result (medians): decode {:.3f}, verify {:.3f}, "
        "draft {:.3f} ms\n",
        w["decode_step"]["median_ms"].get<double>(), w["verify"]["median_ms"].get<double>(),
        w["draft_step"]["median_ms"].get<double>());
  }
  if (j.contains("rounds") && !j["rounds"].is_null()) {
    const auto& r = j["rounds"];
    out += fmt::format(
        "  whole rounds ({} draft steps, then the verification; host wall): {:.3f} ms, the "
        "verification in them {:.3f} ms ({:.3f} ms wall)\n",
        k, r["round_wall"]["median_ms"].get<double>(), r["verify"]["median_ms"].get<double>(),
        r["verify_wall"]["median_ms"].get<double>());
  }
  out += "Speed-up over plain decoding if each draft token is accepted with probability a:\n";
  for (const auto& row : j["speedup_at_acceptance"]) {
    out += fmt::format("  a = {:.1f}: {:.2f}x\n", row["acceptance"].get<double>(),
                       row["speedup"].get<double>());
  }
  out +=
      "With random weights the acceptance a pair reaches means nothing: read the row of the "
      "acceptance your pair reaches on your prompts (generate --speculative reports it).\n";
  return out;
}

}  // namespace inferlab
