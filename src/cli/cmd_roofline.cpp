#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "predict/request_predictor.hpp"
#include "report/roofline_svg.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {

struct RooflineArgs {
  CommonArgs common;
  std::string out;
  int64_t batch = 1, input = 512;
  bool with_model = false;
};

// Ceilings from the measured profile when there is one, from the spec sheet otherwise.
void add_ceilings(RooflineChart& chart, const HardwareSpec& hw) {
  if (hw.profile) {
    const auto& doc = hw.profile->document;
    for (const char* key :
         {"fp8_tensor", "int8_tensor", "bf16_tensor", "tf32_tensor", "fp32_simt", "fp64_simt"}) {
      if (doc["compute"].contains(key)) {
        chart.compute.push_back({key, doc["compute"][key]["flops_per_s"].get<double>()});
      }
    }
    for (const char* level : {"shared", "l2", "hbm"}) {
      chart.memory.push_back(
          {std::string(level) + " read", doc["memory"][level]["read_bps"].get<double>()});
    }
    return;
  }
  for (DType d : {DType::fp8, DType::int8, DType::bf16, DType::fp16, DType::tf32, DType::fp32}) {
    if (auto peak = hw.peak_flops(d)) chart.compute.push_back({std::string(dtype_name(d)), *peak});
  }
  chart.memory.push_back({"hbm (datasheet)", hw.memory_bandwidth_bps});
}

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
    RooflineChart chart;
    add_ceilings(chart, hw.spec);
    chart.title = hw.spec.display_name;
    chart.subtitle = "ceilings: " + hw.spec.ceiling_source();
    bool with_model = cmd->count("--model") > 0;
    std::string model_name;
    if (with_model) {
      ModelConfig model = load_model(a.common.model);
      model_name = model.name;
      PredictOptions o = to_predict_options(a.common);
      o.batch = a.batch;
      o.input_tokens = a.input;
      o.output_tokens = 2;
      RequestPrediction r = predict_request(model, hw.spec, *hw.cost, o, load_host_overhead());
      chart.title += fmt::format(
          ": {} operators, batch {}, prefill of {} tokens and one decode "
          "step ({} kernels)",
          model.name, a.batch, a.input, framework_name(o.framework));
      for (auto [phase, step] : {std::pair{"prefill", &r.prefill}, {"decode", &r.first_decode}}) {
        for (const auto& p : step->ops) {
          if (p.op.flops <= 0 || p.op.bytes() <= 0 || p.cost.time_s <= 0) continue;
          chart.points.push_back(
              {p.op.name, p.op.flops / p.op.bytes(), p.op.flops / p.cost.time_s, phase});
        }
      }
    }
    std::string svg = render_roofline_svg(chart);
    std::ofstream file(a.out);
    if (!file) throw InputError("cannot write '" + a.out + "'");
    file << svg;
    nlohmann::json ceilings = nlohmann::json::array(), points = nlohmann::json::array();
    Table table({"ceiling", "value", "ridge_flops_per_byte"});
    double top = 0;
    for (const auto& c : chart.compute) top = std::max(top, c.value);
    for (const auto& c : chart.compute) {
      ceilings.push_back({{"kind", "compute"}, {"label", c.label}, {"flops_per_s", c.value}});
      table.add_row({c.label, fmt::format("{:.1f} TFLOP/s", c.value / 1e12), ""});
    }
    for (const auto& m : chart.memory) {
      double ridge = ridge_point_flops_per_byte(top, m.value);
      ceilings.push_back({{"kind", "memory"},
                          {"label", m.label},
                          {"bytes_per_s", m.value},
                          {"ridge_point_flops_per_byte", ridge}});
      table.add_row(
          {m.label, fmt::format("{:.2f} TB/s", m.value / 1e12), fmt::format("{:.1f}", ridge)});
    }
    for (const auto& p : chart.points) {
      points.push_back({{"phase", p.group},
                        {"op", p.label},
                        {"intensity_flops_per_byte", p.intensity_flops_per_byte},
                        {"attained_flops_per_s", p.attained_flops_per_s}});
    }
    if (format == OutputFormat::json) {
      print_json({{"svg", a.out},
                  {"hardware", hw.spec.name},
                  {"hardware_source", hw.spec.ceiling_source()},
                  {"model", model_name},
                  {"ceilings", ceilings},
                  {"points", points}});
    } else {
      std::cout << (format == OutputFormat::csv ? table.to_csv() : table.to_text());
      if (format == OutputFormat::table) std::cout << "roofline written to " << a.out << '\n';
    }
  });
}

}  // namespace inferlab::cli
