#include "report/explore_report.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace inferlab {

namespace {
// "cores=66 memory=HBM3": a design's settings, in key order.
std::string settings_text(const DesignPoint& p) {
  std::string out;
  for (const auto& [key, value] : p.settings) {
    out += (out.empty() ? "" : " ") + key + "=" + value;
  }
  return out;
}
}  // namespace

nlohmann::json explore_json(const ExploreRequest& request, const std::vector<DesignPoint>& points) {
  nlohmann::json designs = nlohmann::json::array();
  nlohmann::json front = nlohmann::json::array();
  for (const auto& p : points) {
    designs.push_back({{"name", p.name},
                       {"settings", p.settings},
                       {"die_area_mm2", p.die_area_mm2},
                       {"device_cost_usd", p.device_cost_usd},
                       {"system_cost_usd", p.system_cost_usd},
                       {"fits", p.fits},
                       {"batch", p.batch},
                       {"step_ms", p.step_s * 1e3},
                       {"tokens_per_s", p.tokens_per_s},
                       {"tokens_per_s_per_kusd", p.tokens_per_s_per_kusd},
                       {"pareto", p.pareto}});
    if (p.pareto) front.push_back(p.name);
  }
  return {{"template", request.template_name},
          {"model", request.model.name},
          {"workload", request.workload.text},
          {"devices", request.options.tp * request.pp},
          {"tp", request.options.tp},
          {"pp", request.pp},
          {"designs", designs},
          {"pareto_front", front}};
}

Table explore_table(const std::vector<DesignPoint>& points) {
  Table t({"design", "die_mm2", "system_usd", "batch", "step_ms", "tokens_per_s", "tok_s_per_kusd",
           "pareto"});
  for (const auto& p : points) {
    t.add_row({settings_text(p), format_fixed(p.die_area_mm2, 0),
               format_fixed(p.system_cost_usd, 0), std::to_string(p.batch),
               format_fixed(p.step_s * 1e3, 3), format_fixed(p.tokens_per_s, 1),
               format_fixed(p.tokens_per_s_per_kusd, 2), p.pareto ? "yes" : ""});
  }
  return t;
}

XyChart pareto_chart(const ExploreRequest& request, const std::vector<DesignPoint>& points) {
  XySeries all{"all designs", {}, {}, false, true, {}};
  XySeries front{"Pareto front", {}, {}, true, true, {}};
  std::vector<const DesignPoint*> on_front;
  for (const auto& p : points) {
    if (!(p.tokens_per_s > 0.0)) continue;
    all.x.push_back(p.system_cost_usd / 1000.0);
    all.y.push_back(p.tokens_per_s);
    if (p.pareto) on_front.push_back(&p);
  }
  std::sort(on_front.begin(), on_front.end(),
            [](auto* a, auto* b) { return a->system_cost_usd < b->system_cost_usd; });
  for (const auto* p : on_front) {
    front.x.push_back(p->system_cost_usd / 1000.0);
    front.y.push_back(p->tokens_per_s);
    front.point_labels.push_back(settings_text(*p));
  }
  return {fmt::format("Design space of {}: {} on {}", request.template_name, request.model.name,
                      request.workload.text),
          fmt::format("{} devices per system; cost = die (wafer, yield) + memory + package; "
                      "tilesim step times",
                      request.options.tp * request.pp),
          "system cost (thousand USD)",
          "tokens/s",
          {all, front}};
}

}  // namespace inferlab
