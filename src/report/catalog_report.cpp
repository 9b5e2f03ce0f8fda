#include "report/catalog_report.hpp"

#include <fmt/format.h>

#include "model/footprint.hpp"

namespace inferlab {

namespace {
double kv_bytes_per_token_bf16(const ModelConfig& m) {
  return kv_bytes_per_token(m, DType::bf16, shard_dims(m, 1));
}
}  // namespace

nlohmann::json models_json(const std::vector<ModelConfig>& models) {
  nlohmann::json list = nlohmann::json::array();
  for (const ModelConfig& m : models) {
    list.push_back({{"name", m.name},
                    {"model_type", m.model_type},
                    {"params", m.total_params()},
                    {"layers", m.num_layers},
                    {"hidden_size", m.hidden_size},
                    {"heads", m.num_heads},
                    {"kv_heads", m.num_kv_heads},
                    {"head_dim", m.head_dim},
                    {"intermediate_size", m.intermediate_size},
                    {"vocab_size", m.vocab_size},
                    {"num_experts", m.num_experts},
                    {"experts_per_token", m.experts_per_token},
                    {"tie_word_embeddings", m.tie_word_embeddings},
                    {"kv_bytes_per_token_bf16", kv_bytes_per_token_bf16(m)}});
  }
  return {{"models", list}};
}

Table models_table(const std::vector<ModelConfig>& models, OutputFormat format) {
  Table table({"name", "type", "params", "layers", "hidden", "heads", "kv_heads", "head_dim",
               "intermediate", "vocab", "experts", "kv_bytes_per_token_bf16"});
  for (const ModelConfig& m : models) {
    std::string experts =
        m.is_moe() ? fmt::format("{}x top-{}", m.num_experts, m.experts_per_token) : "-";
    table.add_row(
        {m.name, m.model_type,
         format == OutputFormat::csv ? std::to_string(m.total_params())
                                     : format_count(static_cast<double>(m.total_params())),
         std::to_string(m.num_layers), std::to_string(m.hidden_size), std::to_string(m.num_heads),
         std::to_string(m.num_kv_heads), std::to_string(m.head_dim),
         std::to_string(m.intermediate_size), std::to_string(m.vocab_size), experts,
         fmt::format("{:.0f}", kv_bytes_per_token_bf16(m))});
  }
  return table;
}

nlohmann::json hardware_json(const std::vector<HardwareSpec>& sheets) {
  nlohmann::json list = nlohmann::json::array();
  for (const HardwareSpec& h : sheets) {
    nlohmann::json peaks = nlohmann::json::object();
    for (DType d : kAllDTypes) {
      if (auto p = h.peak_flops(d)) peaks[std::string(dtype_name(d))] = *p;
    }
    nlohmann::json sources = nlohmann::json::object();
    for (const auto& [field, source] : h.sources) sources[field] = source;
    list.push_back({{"name", h.name},
                    {"display_name", h.display_name},
                    {"architecture", h.architecture},
                    {"sm_count", h.sm_count},
                    {"memory_bytes", h.memory_bytes},
                    {"memory_bandwidth_bps", h.memory_bandwidth_bps},
                    {"l2_bytes", h.l2_bytes},
                    {"boost_clock_hz", h.boost_clock_hz},
                    {"peak_flops_per_s", peaks},
                    {"interconnect",
                     {{"kind", h.interconnect.kind},
                      {"bandwidth_bps", h.interconnect.bandwidth_bps},
                      {"latency_s", h.interconnect.latency_s}}},
                    {"sources", sources}});
  }
  return {{"hardware", list}};
}

Table hardware_table(const std::vector<HardwareSpec>& sheets) {
  Table table({"name", "gpu", "sms", "memory", "bandwidth_TBps", "bf16_or_fp16_TFLOPS",
               "fp8_TFLOPS", "int8_TOPS", "l2", "link_GBps"});
  for (const HardwareSpec& h : sheets) {
    auto tflops = [&](DType d) {
      auto p = h.peak_flops(d);
      return p ? fmt::format("{:.1f}", *p / 1e12) : std::string("-");
    };
    double half = h.peak_flops(DType::bf16).value_or(h.peak_flops(DType::fp16).value_or(0));
    table.add_row({h.name, h.display_name, std::to_string(h.sm_count), format_bytes(h.memory_bytes),
                   fmt::format("{:.2f}", h.memory_bandwidth_bps / 1e12),
                   fmt::format("{:.1f}", half / 1e12), tflops(DType::fp8), tflops(DType::int8),
                   format_bytes(h.l2_bytes),
                   fmt::format("{:.0f}", h.interconnect.bandwidth_bps / 1e9)});
  }
  return table;
}

nlohmann::json templates_json(const std::vector<HardwareTemplate>& templates) {
  nlohmann::json list = nlohmann::json::array();
  for (const HardwareTemplate& t : templates) {
    list.push_back({{"name", t.name},
                    {"display_name", t.display_name},
                    {"base", t.base},
                    {"process_node", t.process_node},
                    {"core_count", t.core_count},
                    {"clock_hz", t.clock_hz},
                    {"bf16_peak_flops_per_s", t.matrix_peak_flops(DType::bf16)},
                    {"memory_type", memory_type_name(t.memory.type)},
                    {"memory_bytes", t.memory.capacity_bytes},
                    {"memory_bandwidth_bps", t.memory.bandwidth_bps},
                    {"global_buffer_bytes", t.global_buffer_bytes},
                    {"devices_per_node", t.node.devices}});
  }
  return {{"templates", list}};
}

Table templates_table(const std::vector<HardwareTemplate>& templates) {
  Table table({"name", "design", "node", "cores", "clock_GHz", "bf16_TFLOPS", "memory",
               "bandwidth_TBps", "global_buffer", "devices"});
  for (const HardwareTemplate& t : templates) {
    table.add_row({t.name, t.display_name, t.process_node, std::to_string(t.core_count),
                   fmt::format("{:.2f}", t.clock_hz / 1e9),
                   fmt::format("{:.1f}", t.matrix_peak_flops(DType::bf16) / 1e12),
                   fmt::format("{} {}", format_bytes(t.memory.capacity_bytes),
                               memory_type_name(t.memory.type)),
                   fmt::format("{:.2f}", t.memory.bandwidth_bps / 1e12),
                   format_bytes(t.global_buffer_bytes), std::to_string(t.node.devices)});
  }
  return table;
}

}  // namespace inferlab
