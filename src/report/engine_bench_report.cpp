#include "report/engine_bench_report.hpp"

#include <fmt/format.h>

#include "report/table.hpp"

namespace inferlab {

namespace {

int64_t kv_bytes(const BenchSetup& setup, const engine::BenchResult& r) {
  return r.kv_cache_tokens * r.kv_bytes_per_token / 2 * setup.kv_bytes_per_element;
}

}  // namespace

nlohmann::json timing_stats_json(const engine::TimingStats& s) {
  return {{"median_ms", s.median_s * 1e3}, {"mean_ms", s.mean_s * 1e3}, {"min_ms", s.min_s * 1e3},
          {"max_ms", s.max_s * 1e3},       {"p10_ms", s.p10_s * 1e3},   {"p90_ms", s.p90_s * 1e3},
          {"samples", s.samples}};
}

nlohmann::json routing_json(const engine::RoutingStats& routing) {
  return {{"layers", routing.layers},
          {"tokens", routing.tokens},
          {"experts_reached_mean", routing.experts_reached_mean()},
          {"max_rows_mean", routing.max_rows_mean()},
          {"sorted_loads_sum", routing.sorted_loads_sum}};
}

nlohmann::json kernel_classes_json(const std::vector<engine::KernelClassTime>& kernels) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& k : kernels) {
    out.push_back({{"kernel", k.name},
                   {"ms", k.seconds * 1e3},
                   {"launches", k.launches},
                   {"bytes", k.bytes},
                   {"flops", k.flops},
                   {"achieved_gb_per_s", k.seconds > 0 ? k.bytes / k.seconds / 1e9 : 0.0},
                   {"achieved_tflop_per_s", k.seconds > 0 ? k.flops / k.seconds / 1e12 : 0.0}});
  }
  return out;
}

nlohmann::json bench_json(const BenchSetup& setup, const engine::BenchResult& r,
                          const std::optional<RequestPrediction>& predicted) {
  const auto& o = setup.options;
  nlohmann::json out = {
      {"model", setup.model},
      {"device", setup.device},
      {"device_name", setup.device_name},
      {"batch", o.batch},
      {"input_tokens", o.input_tokens},
      {"output_tokens", o.output_tokens},
      {"timing", r.device_timed ? "CUDA events around each forward pass" : "host wall clock"},
      {"cuda_graphs", setup.cuda_graphs},
      {"quantization", setup.quant},
      {"tp", setup.tp},
      {"prefill_ms", r.prefill.median_s * 1e3},
      {"ttft_ms", r.ttft_s * 1e3},
      {"tpot_ms", r.tpot_s * 1e3},
      {"e2e_ms", r.e2e_s * 1e3},
      {"decode_tokens_per_s", r.decode_tokens_per_s},
      {"prefill_tokens_per_s", r.prefill_tokens_per_s},
      {"spread",
       {{"prefill", timing_stats_json(r.prefill)},
        {"decode_step", timing_stats_json(r.decode_step)},
        {"prefill_wall", timing_stats_json(r.prefill_wall)},
        {"decode_step_wall", timing_stats_json(r.decode_step_wall)}}},
      {"memory",
       {{"weights_bytes", setup.weight_bytes},
        {"kv_cache_bytes", kv_bytes(setup, r)},
        {"kv_cache_tokens", r.kv_cache_tokens},
        {"kv_bytes_per_token", r.kv_bytes_per_token / 2 * setup.kv_bytes_per_element}}},
      {"kernels",
       {{"prefill", kernel_classes_json(r.prefill_kernels)},
        {"decode", kernel_classes_json(r.decode_kernels)}}},
  };
  if (!r.decode_routing.empty()) {
    out["moe_routing"] = {{"prefill", routing_json(r.prefill_routing)},
                          {"decode", routing_json(r.decode_routing)}};
  }
  if (predicted) {
    const RequestPrediction& p = *predicted;
    out["predicted"] = {
        {"framework", "inferlab"},   {"prefill_ms", p.prefill_s * 1e3},
        {"ttft_ms", p.ttft_s * 1e3}, {"tpot_ms", p.tpot_s * 1e3},
        {"e2e_ms", p.e2e_s * 1e3},   {"decode_tokens_per_s", p.decode_tokens_per_s}};
    auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
    out["measured_over_predicted"] = {{"prefill", ratio(r.prefill.median_s, p.prefill_s)},
                                      {"tpot", ratio(r.tpot_s, p.tpot_s)},
                                      {"e2e", ratio(r.e2e_s, p.e2e_s)}};
  }
  return out;
}

std::string bench_text(const BenchSetup& setup, const engine::BenchResult& r,
                       const std::optional<RequestPrediction>& predicted) {
  const auto& o = setup.options;
  std::string text =
      fmt::format("{} on {} ({}), batch {}, input {}, output {}; {}\n", setup.model,
                  setup.device_name, setup.device, o.batch, o.input_tokens, o.output_tokens,
                  r.device_timed ? "device time by CUDA events" : "host wall time");
  Table summary({"figure", "measured", "spread", predicted ? "predicted" : ""});
  auto spread = [](const engine::TimingStats& s) {
    return fmt::format("{:.3f}-{:.3f} ms (n={})", s.min_s * 1e3, s.max_s * 1e3, s.samples);
  };
  auto pred = [&](double seconds) { return predicted ? format_ms(seconds) : std::string(); };
  summary.add_row({"prefill (median)", format_ms(r.prefill.median_s), spread(r.prefill),
                   pred(predicted ? predicted->prefill_s : 0)});
  summary.add_row({"TPOT (mean step)", format_ms(r.tpot_s), spread(r.decode_step),
                   pred(predicted ? predicted->tpot_s : 0)});
  summary.add_row({"end to end", format_ms(r.e2e_s), "", pred(predicted ? predicted->e2e_s : 0)});
  summary.add_row({"decode tokens/s", format_fixed(r.decode_tokens_per_s, 1), "",
                   predicted ? format_fixed(predicted->decode_tokens_per_s, 1) : ""});
  summary.add_row({"weights", format_bytes(static_cast<double>(setup.weight_bytes)), "", ""});
  summary.add_row({"KV cache", format_bytes(static_cast<double>(kv_bytes(setup, r))),
                   fmt::format("{} tokens", r.kv_cache_tokens), ""});
  text += summary.to_text();
  for (const auto& [phase, kernels] :
       {std::pair{"prefill", &r.prefill_kernels}, std::pair{"decode", &r.decode_kernels}}) {
    if (kernels->empty()) continue;
    double total = 0;
    for (const auto& k : *kernels) total += k.seconds;
    Table t({std::string(phase) + " kernels", "ms", "share", "GB/s", "TFLOP/s", "launches"});
    for (const auto& k : *kernels) {
      t.add_row({k.name, format_fixed(k.seconds * 1e3, 3),
                 format_fixed(100 * k.seconds / total, 1) + "%",
                 format_fixed(k.seconds > 0 ? k.bytes / k.seconds / 1e9 : 0, 0),
                 format_fixed(k.seconds > 0 ? k.flops / k.seconds / 1e12 : 0, 1),
                 std::to_string(k.launches)});
    }
    text += '\n';
    text += t.to_text();
  }
  return text;
}

}  // namespace inferlab
