#include "report/op_report.hpp"

#include <fmt/format.h>

#include "report/table.hpp"

namespace inferlab {

namespace {
Table op_table() {
  return Table({"op", "hardware", "ms", "isolated_ms", "flops", "bytes", "bound", "efficiency"});
}

// The plan in words: a calibrated GEMM's tiling, or a simulated mapping.
std::string plan_text(const nlohmann::json& plan) {
  if (plan.is_object() && plan.contains("tile_m")) {
    const auto waves = plan["waves"].get<int64_t>();
    const auto split_k = plan["split_k"].get<int64_t>();
    return fmt::format("plan: {}x{} tiles (rows x columns), {}{} CTAs in {} wave{}\n",
                       plan["tile_m"].get<int64_t>(), plan["tile_n"].get<int64_t>(),
                       split_k > 1                    ? fmt::format("split-K {}, ", split_k)
                       : plan["stream_k"].get<bool>() ? std::string("stream-K, ")
                                                      : std::string(),
                       plan["ctas"].get<int64_t>(), waves, waves == 1 ? "" : "s");
  }
  if (plan.is_object() && plan.contains("mapping")) {
    return "mapping: " + plan["mapping"].get<std::string>() + "\n";
  }
  return "";
}
}  // namespace

nlohmann::json op_report_json(const OpReport& r) {
  const OpCost& cost = r.cost;
  nlohmann::json out = {{"op", r.what},
                        {"hardware", r.hardware},
                        {"hardware_source", r.hardware_source},
                        {"ms", cost.time_s * 1e3},
                        {"isolated_ms", r.isolated_s * 1e3},
                        {"flops", r.op.flops},
                        {"bytes", r.op.bytes()},
                        {"bound", std::string(bound_name(cost.bound))},
                        {"op_class", std::string(op_class_name(cost.op_class))},
                        {"efficiency", cost.efficiency()},
                        {"compute_ms", cost.compute_s * 1e3},
                        {"memory_ms", cost.memory_s * 1e3},
                        {"latency_ms", cost.latency_s * 1e3}};
  if (!r.plan.is_null()) out["plan"] = r.plan;
  return out;
}

std::string op_report_text(const OpReport& r) {
  Table table = op_table();
  table.add_row({r.what, r.hardware, format_ms(r.cost.time_s), format_ms(r.isolated_s),
                 format_count(r.op.flops), format_bytes(r.op.bytes()),
                 std::string(bound_name(r.cost.bound)),
                 format_fixed(100.0 * r.cost.efficiency(), 0) + "%"});
  return table.to_text() + plan_text(r.plan);
}

std::string op_report_csv(const OpReport& r) {
  Table table = op_table();
  table.add_row({r.what, r.hardware, fmt::format("{:.6g}", r.cost.time_s * 1e3),
                 fmt::format("{:.6g}", r.isolated_s * 1e3), fmt::format("{:.6g}", r.op.flops),
                 fmt::format("{:.6g}", r.op.bytes()), std::string(bound_name(r.cost.bound)),
                 fmt::format("{:.4f}", r.cost.efficiency())});
  return table.to_csv();
}

}  // namespace inferlab
