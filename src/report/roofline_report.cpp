#include "report/roofline_report.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace inferlab {

namespace {
double top_compute(const RooflineChart& chart) {
  double top = 0;
  for (const auto& c : chart.compute) top = std::max(top, c.value);
  return top;
}
}  // namespace

RooflineChart roofline_chart(const HardwareSpec& hw) {
  RooflineChart chart;
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
  } else {
    for (DType d : {DType::fp8, DType::int8, DType::bf16, DType::fp16, DType::tf32, DType::fp32}) {
      if (auto peak = hw.peak_flops(d)) {
        chart.compute.push_back({std::string(dtype_name(d)), *peak});
      }
    }
    chart.memory.push_back({"hbm (datasheet)", hw.memory_bandwidth_bps});
  }
  chart.title = hw.display_name;
  chart.subtitle = "ceilings: " + hw.ceiling_source();
  return chart;
}

void add_request_points(RooflineChart& chart, const std::string& model, const PredictOptions& o,
                        const RequestPrediction& r) {
  chart.title += fmt::format(
      ": {} operators, batch {}, prefill of {} tokens and one decode "
      "step ({} kernels)",
      model, o.batch, o.input_tokens, framework_name(o.framework));
  for (auto [phase, step] : {std::pair{"prefill", &r.prefill}, {"decode", &r.first_decode}}) {
    for (const auto& p : step->ops) {
      if (p.op.flops <= 0 || p.op.bytes() <= 0 || p.cost.time_s <= 0) continue;
      chart.points.push_back(
          {p.op.name, p.op.flops / p.op.bytes(), p.op.flops / p.cost.time_s, phase});
    }
  }
}

nlohmann::json roofline_json(const RooflineChart& chart, const HardwareSpec& hw,
                             const std::string& model, const std::string& svg_path) {
  nlohmann::json ceilings = nlohmann::json::array(), points = nlohmann::json::array();
  const double top = top_compute(chart);
  for (const auto& c : chart.compute) {
    ceilings.push_back({{"kind", "compute"}, {"label", c.label}, {"flops_per_s", c.value}});
  }
  for (const auto& m : chart.memory) {
    ceilings.push_back({{"kind", "memory"},
                        {"label", m.label},
                        {"bytes_per_s", m.value},
                        {"ridge_point_flops_per_byte", ridge_point_flops_per_byte(top, m.value)}});
  }
  for (const auto& p : chart.points) {
    points.push_back({{"phase", p.group},
                      {"op", p.label},
                      {"intensity_flops_per_byte", p.intensity_flops_per_byte},
                      {"attained_flops_per_s", p.attained_flops_per_s}});
  }
  return {{"svg", svg_path}, {"hardware", hw.name},  {"hardware_source", hw.ceiling_source()},
          {"model", model},  {"ceilings", ceilings}, {"points", points}};
}

Table roofline_table(const RooflineChart& chart) {
  Table table({"ceiling", "value", "ridge_flops_per_byte"});
  const double top = top_compute(chart);
  for (const auto& c : chart.compute) {
    table.add_row({c.label, fmt::format("{:.1f} TFLOP/s", c.value / 1e12), ""});
  }
  for (const auto& m : chart.memory) {
    table.add_row({m.label, fmt::format("{:.2f} TB/s", m.value / 1e12),
                   fmt::format("{:.1f}", ridge_point_flops_per_byte(top, m.value))});
  }
  return table;
}

std::string roofline_text(const RooflineChart& chart, const std::string& svg_path) {
  return roofline_table(chart).to_text() + "roofline written to " + svg_path + '\n';
}

}  // namespace inferlab
