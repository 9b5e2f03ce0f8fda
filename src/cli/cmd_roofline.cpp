#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "predict/request_predictor.hpp"
#include "report/emit.hpp"
#include "report/roofline_report.hpp"

namespace inferlab::cli {

namespace {
struct RooflineArgs {
  CommonArgs common;
  std::string out;
  int64_t batch = 1, input = 512;
};
}  // namespace

void register_roofline(CLI::App& app) {
  auto args = std::make_shared<RooflineArgs>();
  CLI::App* cmd = app.add_subcommand(
      "roofline", "Draw the hierarchical roofline (SVG), with a model's operators placed on it");
  add_model_options(cmd, args->common);
  add_hardware_options(cmd, args->common);
  add_format_option(cmd, args->common);
  cmd->add_option("--out", args->out, "SVG file to write")->required();
  cmd->add_option("--batch", args->batch, "Sequences")->capture_default_str();
  cmd->add_option("--input", args->input, "Prompt tokens (decode is placed at input + 1)")
      ->capture_default_str();
  cmd->callback([args, cmd] {
    const auto& a = *args;
    OutputFormat format = parse_output_format(a.common.format);
    LoadedHardware hw = load_cost_model(a.common);
    RooflineChart chart = roofline_chart(hw.spec);
    std::string model_name;
    if (cmd->count("--model") > 0) {
      ModelConfig model = load_model(a.common.model);
      model_name = model.name;
      PredictOptions o = to_predict_options(a.common);
      o.batch = a.batch;
      o.input_tokens = a.input;
      o.output_tokens = 2;
      RequestPrediction r = predict_request(model, hw.spec, *hw.cost, o, load_host_overhead());
      add_request_points(chart, model.name, o, r);
    }
    const std::string svg = render_roofline_svg(chart);
    open_output(a.out) << svg;
    emit(roofline_json(chart, hw.spec, model_name, a.out), roofline_text(chart, a.out),
         roofline_table(chart).to_csv(), format);
  });
}

}  // namespace inferlab::cli
