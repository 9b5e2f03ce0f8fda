#include "report/prediction_report.hpp"

#include <fmt/format.h>

#include "report/sustained_report.hpp"

namespace inferlab {

nlohmann::json op_to_json(const PricedOp& p) {
  const double count = static_cast<double>(p.op.count);
  nlohmann::json out = {
      {"name", p.op.name},
      {"kind", std::string(op_kind_name(p.op.kind))},
      {"op_class", std::string(op_class_name(p.cost.op_class))},
      {"count", p.op.count},
      {"kernels", p.op.kernels * p.op.count},
      {"flops", p.op.flops * count},
      {"bytes", p.op.bytes() * count},
      {"weight_bytes", p.op.weight_bytes * count},
      {"activation_bytes", p.op.activation_bytes * count},
      {"kv_bytes", p.op.kv_bytes * count},
      {"comm_bytes", p.op.comm_bytes * count},
      {"ms", p.total_s() * 1e3},
      {"bound", std::string(bound_name(p.cost.bound))},
      {"efficiency", p.cost.efficiency()},
  };
  // Each instance timed alone (L2 flushed), over all instances like `ms`.
  if (p.isolated_s) out["isolated_ms"] = *p.isolated_s * count * 1e3;
  return out;
}

nlohmann::json step_to_json(const StepPrediction& step) {
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& p : step.ops) ops.push_back(op_to_json(p));
  return {{"ms", step.time_s * 1e3},
          {"gpu_ms", step.gpu_s * 1e3},
          {"kernels", step.kernels},
          {"ops", ops}};
}

nlohmann::json memory_to_json(const MemoryEstimate& m) {
  return {{"weights_bytes", m.weights_bytes},
          {"kv_cache_bytes", m.kv_cache_bytes},
          {"activations_bytes", m.activations_bytes},
          {"total_bytes", m.total_bytes},
          {"capacity_bytes", m.capacity_bytes},
          {"usable_bytes", m.usable_bytes},
          {"fits", m.fits}};
}

nlohmann::json request_to_json(const RequestPrediction& r) {
  nlohmann::json prefill = step_to_json(r.prefill);
  prefill["phase"] = "prefill";
  nlohmann::json decode = step_to_json(r.first_decode);
  decode["phase"] = "decode";
  decode["steps"] = r.decode_steps;
  decode["total_ms"] = r.decode_total_s * 1e3;
  return {{"prefill_ms", r.prefill_s * 1e3},
          {"ttft_ms", r.ttft_s * 1e3},
          {"tpot_ms", r.tpot_s * 1e3},
          {"decode_ms", r.decode_total_s * 1e3},
          {"e2e_ms", r.e2e_s * 1e3},
          {"decode_tokens_per_s", r.decode_tokens_per_s},
          {"total_tokens_per_s", r.total_tokens_per_s},
          {"memory", memory_to_json(r.memory)},
          {"phases", nlohmann::json::array({prefill, decode})}};
}

namespace {
Table breakdown(const StepPrediction& step, const std::string& phase, bool raw) {
  std::vector<std::string> headers = {"op", "kind",  "count", "flops",     "bytes",
                                      "ms", "share", "bound", "efficiency"};
  if (!phase.empty()) headers.insert(headers.begin(), "phase");
  Table table(headers);
  for (const auto& p : step.ops) {
    const double count = static_cast<double>(p.op.count);
    const double share = step.gpu_s > 0.0 ? p.total_s() / step.gpu_s : 0.0;
    std::vector<std::string> row = {
        p.op.name,
        std::string(op_kind_name(p.op.kind)),
        std::to_string(p.op.count),
        raw ? fmt::format("{:.6g}", p.op.flops * count) : format_count(p.op.flops * count),
        raw ? fmt::format("{:.6g}", p.op.bytes() * count) : format_bytes(p.op.bytes() * count),
        raw ? fmt::format("{:.6g}", p.total_s() * 1e3) : format_ms(p.total_s()),
        raw ? fmt::format("{:.4f}", share) : format_fixed(100.0 * share, 1) + "%",
        std::string(bound_name(p.cost.bound)),
        raw ? fmt::format("{:.4f}", p.cost.efficiency())
            : format_fixed(100.0 * p.cost.efficiency(), 0) + "%"};
    if (!phase.empty()) row.insert(row.begin(), phase);
    table.add_row(row);
  }
  return table;
}
}  // namespace

Table step_table(const StepPrediction& step, const std::string& phase) {
  return breakdown(step, phase, false);
}

Table step_csv_table(const StepPrediction& step, const std::string& phase) {
  return breakdown(step, phase, true);
}

}  // namespace inferlab

namespace inferlab {

nlohmann::json request_setup_json(const RequestSetupView& v) {
  const PredictOptions& o = v.options;
  nlohmann::json out = {{"model", v.model},
                        {"hardware", v.hardware.name},
                        {"hardware_source", v.hardware.ceiling_source()},
                        {"cost_model", v.cost_model},
                        {"cost_source", v.cost_source},
                        {"batch", o.batch},
                        {"input_tokens", o.input_tokens},
                        {"output_tokens", o.output_tokens},
                        {"weights", std::string(dtype_name(v.precision.weights))},
                        {"activations", std::string(dtype_name(v.precision.activations))},
                        {"kv", std::string(dtype_name(v.precision.kv))},
                        {"framework", std::string(framework_name(o.framework))},
                        {"cuda_graphs", o.cuda_graphs},
                        {"flash_attention", o.flash_attention},
                        {"tp", o.tp},
                        {"sustained_clock", sustained_clock_json(v.sustained)},
                        {"unvalidated", v.unvalidated}};
  if (o.framework == Framework::inferlab) {  // the engine's own switches
    out["gemv"] = o.gemv;
    out["fusion"] = o.fusion;
  }
  return out;
}

namespace {
Table request_summary_table(const RequestPrediction& r) {
  Table summary({"metric", "value"});
  summary.add_row({"prefill (ms)", format_ms(r.prefill_s)});
  summary.add_row({"TTFT (ms)", format_ms(r.ttft_s)});
  summary.add_row({"TPOT (ms)", format_ms(r.tpot_s)});
  summary.add_row({"end-to-end (ms)", format_ms(r.e2e_s)});
  summary.add_row({"decode tokens/s", format_fixed(r.decode_tokens_per_s, 1)});
  summary.add_row({"weights", format_bytes(r.memory.weights_bytes)});
  summary.add_row({"KV cache", format_bytes(r.memory.kv_cache_bytes)});
  summary.add_row({"activations", format_bytes(r.memory.activations_bytes)});
  summary.add_row({"memory total", format_bytes(r.memory.total_bytes)});
  summary.add_row({"usable / capacity", format_bytes(r.memory.usable_bytes) + " / " +
                                            format_bytes(r.memory.capacity_bytes)});
  summary.add_row({"fits", r.memory.fits ? "yes" : "NO"});
  return summary;
}
}  // namespace

std::string request_text(const RequestSetupView& v, const RequestPrediction& r) {
  const PredictOptions& o = v.options;
  std::string out = fmt::format(
      "inferlab predict: {} on {} ({} cost model; ceilings from the {})\n"
      "batch {}, input {}, output {}; weights {}, activations {}, KV {}; {} kernels{}, CUDA "
      "graphs {}, FlashAttention {}, TP {}\n{}\n",
      v.model, v.hardware.display_name, v.cost_model, v.hardware.ceiling_source(), o.batch,
      o.input_tokens, o.output_tokens, dtype_name(v.precision.weights),
      dtype_name(v.precision.activations), dtype_name(v.precision.kv), framework_name(o.framework),
      o.framework == Framework::inferlab
          ? fmt::format(" (GEMV {}, fusion {})", o.gemv ? "on" : "off", o.fusion ? "on" : "off")
          : std::string(),
      o.cuda_graphs ? "on" : "off", o.flash_attention ? "on" : "off", o.tp,
      sustained_clock_line(v.sustained));
  out += request_summary_table(r).to_text() + '\n';
  out += fmt::format("Prefill step: {} ms, {} kernels\n", format_ms(r.prefill.time_s),
                     r.prefill.kernels) +
         step_table(r.prefill).to_text() + '\n';
  out += fmt::format("Decode step at context {}: {} ms, {} kernels (TPOT averages {} steps)\n",
                     o.input_tokens + 1, format_ms(r.first_decode.time_s), r.first_decode.kernels,
                     r.decode_steps) +
         step_table(r.first_decode).to_text();
  for (const std::string& note : v.unvalidated) out += "\nnote: unvalidated: " + note;
  if (!v.unvalidated.empty()) out += '\n';
  return out;
}

std::string request_csv(const RequestPrediction& r) {
  std::string prefill = step_csv_table(r.prefill, "prefill").to_csv();
  std::string decode = step_csv_table(r.first_decode, "decode").to_csv();
  return prefill + decode.substr(decode.find('\n') + 1);
}

}  // namespace inferlab
