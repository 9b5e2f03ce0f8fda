#include "report/capacity_report.hpp"

#include <cmath>

namespace inferlab {

namespace {
nlohmann::json maybe(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}
}  // namespace

nlohmann::json capacity_json(const CapacityPlanRequest& plan,
                             const std::vector<CapacityOutcome>& outcomes) {
  nlohmann::json configs = nlohmann::json::array();
  for (const auto& c : outcomes) {
    const auto& s = c.search.at_max;
    configs.push_back({{"hardware", c.hardware},
                       {"tp", c.tp},
                       {"fits", c.fits},
                       {"note", c.note},
                       {"kv_blocks", c.kv_blocks},
                       {"max_rate_per_s", c.search.max_rate_per_s},
                       {"output_tokens_per_s", s.output_tokens_per_s},
                       {"ttft_p99_ms", s.ttft.p99_s * 1e3},
                       {"tpot_p99_ms", s.tpot.p99_s * 1e3},
                       {"usd_per_device_hour", maybe(c.usd_per_device_hour)},
                       {"usd_per_million_output_tokens", maybe(c.usd_per_million_tokens)},
                       {"simulations", c.search.simulations}});
  }
  const CapacitySlo& slo = plan.slo;
  return {{"model", plan.model.name},
          {"slo", {{"ttft_p99_ms", slo.ttft_p99_s * 1e3}, {"tpot_p99_ms", slo.tpot_p99_s * 1e3}}},
          {"policy", schedule_policy_name(plan.scheduler.policy)},
          {"requests", plan.unit_rate_requests.size()},
          {"configurations", configs}};
}

Table capacity_table(const std::vector<CapacityOutcome>& outcomes) {
  Table t({"hardware", "tp", "max_rate_per_s", "output_tok_s", "ttft_p99_ms", "tpot_p99_ms",
           "usd_per_m_tokens", "note"});
  for (const auto& c : outcomes) {
    const auto& s = c.search.at_max;
    t.add_row(
        {c.hardware, std::to_string(c.tp), format_fixed(c.search.max_rate_per_s, 2),
         format_fixed(s.output_tokens_per_s, 0), format_fixed(s.ttft.p99_s * 1e3, 1),
         format_fixed(s.tpot.p99_s * 1e3, 2),
         std::isfinite(c.usd_per_million_tokens) ? format_fixed(c.usd_per_million_tokens, 3) : "",
         c.note});
  }
  return t;
}

}  // namespace inferlab
