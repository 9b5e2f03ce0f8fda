#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "cli/explore_grammar.hpp"
#include "explore/design_space.hpp"
#include "report/emit.hpp"
#include "report/explore_report.hpp"
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

ExploreRequest make_explore_request(ExploreArgs a) {
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
  return request;
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
    OutputFormat format = parse_output_format(args->common.format);
    const ExploreRequest request = make_explore_request(*args);
    std::vector<DesignPoint> points = explore_designs(request);
    if (!args->svg.empty()) {
      open_output(args->svg, "--svg") << render_xy_chart_svg(pareto_chart(request, points));
    }
    emit(explore_json(request, points), explore_table(points), format);
  });
}

}  // namespace inferlab::cli
