#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "explore/design_space.hpp"
#include "report/xy_chart_svg.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {
struct ExploreArgs {
  CommonArgs common;
  std::string template_name = "h100-sxm";
  std::vector<std::string> vary;
  std::string workload = "decode:context=2048,batch=max";
  std::string svg;
  int devices = 1, pp = 1;
};

std::string settings_text(const DesignPoint& p) {
  std::string out;
  for (const auto& [key, value] : p.settings) {
    out += (out.empty() ? "" : " ") + key + "=" + value;
  }
  return out;
}

XyChart pareto_chart(const std::vector<DesignPoint>& points, const ExploreRequest& request) {
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
}  // namespace

void register_explore(CLI::App& app) {
  auto args = std::make_shared<ExploreArgs>();
  CLI::App* cmd = app.add_subcommand(
      "explore",
      "Sweep hardware designs around a template: throughput (tilesim), area and cost of each, "
      "and the Pareto front of cost against throughput");
  add_model_options(cmd, args->common);
  add_format_option(cmd, args->common);
  cmd->add_option("--template", args->template_name, "Base hardware template")
      ->capture_default_str();
  cmd->add_option("--vary", args->vary,
                  "key=v1,v2[,key2=...]: cores, clock_ghz, l2_mb, memory (a type), memory_gb, "
                  "memory_tbps, tensor_rows, tensor_cols, local_kb; applied in the order given")
      ->required();
  cmd->add_option("--workload", args->workload,
                  "prefill:tokens=T,batch=B or decode:context=L,batch=B|max[,max_batch=N]")
      ->capture_default_str();
  cmd->add_option("--devices", args->devices, "Devices per system (tp x pp)")
      ->capture_default_str();
  cmd->add_option("--pp", args->pp, "Pipeline stages")->capture_default_str();
  cmd->add_option("--svg", args->svg, "Also write the cost-throughput chart here");
  cmd->callback([args] {
    auto a = *args;
    OutputFormat format = parse_output_format(a.common.format);
    if (a.devices < 1 || a.pp < 1 || a.devices % a.pp != 0) {
      throw InputError("--devices must be a positive multiple of --pp");
    }
    std::string joined;
    for (const auto& v : a.vary) joined += (joined.empty() ? "" : ",") + v;
    ExploreRequest request;
    request.template_name = a.template_name;
    request.axes = parse_design_axes(joined);
    request.workload = parse_design_workload(a.workload);
    request.model = load_model(a.common.model);
    a.common.tp = a.devices / a.pp;
    request.options = to_predict_options(a.common);
    request.pp = a.pp;
    std::vector<DesignPoint> points = explore_designs(request);
    if (!a.svg.empty()) {
      std::ofstream out(a.svg);
      if (!out) throw InputError("cannot write --svg file '" + a.svg + "'");
      out << render_xy_chart_svg(pareto_chart(points, request));
    }
    if (format == OutputFormat::json) {
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
      print_json({{"template", a.template_name},
                  {"model", request.model.name},
                  {"workload", a.workload},
                  {"devices", a.devices},
                  {"tp", request.options.tp},
                  {"pp", a.pp},
                  {"designs", designs},
                  {"pareto_front", front}});
      return;
    }
    Table t({"design", "die_mm2", "system_usd", "batch", "step_ms", "tokens_per_s",
             "tok_s_per_kusd", "pareto"});
    for (const auto& p : points) {
      t.add_row({settings_text(p), format_fixed(p.die_area_mm2, 0),
                 format_fixed(p.system_cost_usd, 0), std::to_string(p.batch),
                 format_fixed(p.step_s * 1e3, 3), format_fixed(p.tokens_per_s, 1),
                 format_fixed(p.tokens_per_s_per_kusd, 2), p.pareto ? "yes" : ""});
    }
    std::cout << (format == OutputFormat::csv ? t.to_csv() : t.to_text());
  });
}

}  // namespace inferlab::cli
