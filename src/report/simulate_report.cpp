#include "report/simulate_report.hpp"

#include <fmt/format.h>

#include <map>

#include "report/table.hpp"

namespace inferlab {

namespace {
nlohmann::json simulated_op_json(const SimulatedOp& s) {
  const auto& b = s.breakdown;
  return {{"name", s.priced.op.name},
          {"kind", op_kind_name(s.priced.op.kind)},
          {"count", s.priced.op.count},
          {"ms_each", b.time_s * 1e3},
          {"ms_total", s.priced.total_s() * 1e3},
          {"bound", b.bound},
          {"mapping", b.mapping},
          {"compute_ms", b.compute_s * 1e3},
          {"vector_ms", b.vector_s * 1e3},
          {"local_ms", b.local_s * 1e3},
          {"global_buffer_ms", b.global_s * 1e3},
          {"memory_ms", b.memory_s * 1e3},
          {"communication_ms", b.communication_s * 1e3},
          {"fixed_ms", b.fixed_s * 1e3}};
}

Table ops_table(const SimulationResult& r) {
  Table t({"op", "count", "ms_each", "bound", "mapping"});
  for (const auto& op : r.ops) {
    t.add_row({op.priced.op.name, std::to_string(op.priced.op.count),
               fmt::format("{:.4f}", op.breakdown.time_s * 1e3), op.breakdown.bound,
               op.breakdown.mapping});
  }
  return t;
}
}  // namespace

nlohmann::json simulate_json(const SimulateRun& run) {
  const SimulationResult& r = *run.result;
  std::map<std::string, double> by_bound;
  for (const auto& op : r.ops) by_bound[op.breakdown.bound] += op.priced.total_s() * 1e3;
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& op : r.ops) ops.push_back(simulated_op_json(op));
  return {{"model", run.model},
          {"hardware", run.hardware},
          {"devices", run.devices},
          {"tp", run.tp},
          {"pp", run.pp},
          {"phase", run.phase},
          {"batch", run.batch},
          {run.phase == "prefill" ? "tokens" : "context", run.context},
          {"ms", r.time_s * 1e3},
          {"stage_ms", r.stage_s * 1e3},
          {"per_layer_ms", r.per_layer_s * 1e3},
          {"p2p_ms", r.p2p_s * 1e3},
          {"attention_forms_ms", {{"flash", run.flash_s * 1e3}, {"unfused", run.unfused_s * 1e3}}},
          {"layers_per_stage", r.layers_per_stage},
          {"stage_time_by_bound_ms", by_bound},
          {"memory",
           {{"weights_per_device_bytes", r.weights_per_device_bytes},
            {"kv_per_device_bytes", r.kv_per_device_bytes},
            {"capacity_bytes", r.capacity_bytes},
            {"fits", r.fits}}},
          {"ops", ops}};
}

std::string simulate_text(const SimulateRun& run) {
  const SimulationResult& r = *run.result;
  return fmt::format(
             "{} of {} on {} x {} (tp {}, pp {}): {} ms; one stage {} ms, {} layers; "
             "memory per device {:.1f} of {:.1f} GB ({}); with FlashAttention {} ms, "
             "unfused {} ms\n\n",
             run.phase, run.model, run.devices, run.hardware_display_name, run.tp, run.pp,
             format_ms(r.time_s), format_ms(r.stage_s), r.layers_per_stage,
             (r.weights_per_device_bytes + r.kv_per_device_bytes) / 1e9, r.capacity_bytes / 1e9,
             r.fits ? "fits" : "does not fit", format_ms(run.flash_s), format_ms(run.unfused_s)) +
         ops_table(r).to_text();
}

std::string simulate_csv(const SimulateRun& run) {
  return ops_table(*run.result).to_csv();
}

}  // namespace inferlab
