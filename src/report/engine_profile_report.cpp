#include "report/engine_profile_report.hpp"

#include <fmt/format.h>

#include "report/engine_bench_report.hpp"

namespace inferlab {

nlohmann::json engine_profile_json(const EngineProfileSetup& setup,
                                   const std::vector<engine::ProfileMeasurement>& points) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& m : points) {
    nlohmann::json kernels = nlohmann::json::array();
    for (const auto& k : m.kernels) {
      kernels.push_back({{"kernel", k.name},
                         {"ms", k.seconds * 1e3},
                         {"bytes", k.bytes},
                         {"flops", k.flops},
                         {"launches", k.launches}});
    }
    rows.push_back({{"phase", m.point.prefill ? "prefill" : "decode"},
                    {"batch", m.point.batch},
                    {"tokens", m.point.tokens},
                    {"context", m.point.context},
                    {"split", m.point.holdout ? "holdout" : "fit"},
                    {"step_ms", m.step.median_s * 1e3},
                    {"step_min_ms", m.step.min_s * 1e3},
                    {"step_max_ms", m.step.max_s * 1e3},
                    {"repeats", m.step.samples},
                    {"profiled_context", m.profiled_context},
                    {"kernels", kernels}});
    if (!m.routing.empty()) rows.back()["moe_routing"] = routing_json(m.routing);
  }
  return {{"kind", "engine_profile"},
          {"model", setup.model},
          {"hardware", setup.hardware},
          {"device_name", setup.device_name},
          {"measured_at", setup.measured_at},
          {"switches", setup.switches},
          {"points", rows}};
}

std::string engine_profile_text(const nlohmann::json& profile) {
  std::string text =
      fmt::format("Engine profile: {} on {} ({})\n", profile["model"].get<std::string>(),
                  profile["device_name"].get<std::string>(), profile["switches"].dump());
  text += fmt::format("{:<8} {:>6} {:>7} {:>8} {:>8} {:>10} {:>10} {:>10}\n", "phase", "batch",
                      "tokens", "context", "split", "step ms", "min ms", "max ms");
  for (const auto& p : profile["points"]) {
    text += fmt::format("{:<8} {:>6} {:>7} {:>8} {:>8} {:>10.3f} {:>10.3f} {:>10.3f}\n",
                        p["phase"].get<std::string>(), p["batch"].get<int64_t>(),
                        p["tokens"].get<int64_t>(), p["context"].get<int64_t>(),
                        p["split"].get<std::string>(), p["step_ms"].get<double>(),
                        p["step_min_ms"].get<double>(), p["step_max_ms"].get<double>());
  }
  return text;
}

}  // namespace inferlab
