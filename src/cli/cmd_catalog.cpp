#include <fmt/format.h>

#include <iostream>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "model/footprint.hpp"

namespace inferlab::cli {

void register_catalog(CLI::App& app) {
  auto args = std::make_shared<CommonArgs>();
  CLI::App* models = app.add_subcommand("models", "Shipped models with their key numbers");
  add_format_option(models, *args);
  models->callback([args] {
    OutputFormat format = parse_output_format(args->format);
    nlohmann::json list = nlohmann::json::array();
    Table table({"name", "type", "params", "layers", "hidden", "heads", "kv_heads", "head_dim",
                 "intermediate", "vocab", "experts", "kv_bytes_per_token_bf16"});
    for (const auto& name : known_models()) {
      ModelConfig m = load_model(name);
      double kv = kv_bytes_per_token(m, DType::bf16, shard_dims(m, 1));
      std::string experts =
          m.is_moe() ? fmt::format("{}x top-{}", m.num_experts, m.experts_per_token) : "-";
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
                      {"kv_bytes_per_token_bf16", kv}});
      table.add_row({m.name, m.model_type,
                     format == OutputFormat::csv
                         ? std::to_string(m.total_params())
                         : format_count(static_cast<double>(m.total_params())),
                     std::to_string(m.num_layers), std::to_string(m.hidden_size),
                     std::to_string(m.num_heads), std::to_string(m.num_kv_heads),
                     std::to_string(m.head_dim), std::to_string(m.intermediate_size),
                     std::to_string(m.vocab_size), experts, fmt::format("{:.0f}", kv)});
    }
    if (format == OutputFormat::json) {
      print_json({{"models", list}});
    } else {
      std::cout << (format == OutputFormat::csv ? table.to_csv() : table.to_text());
    }
  });

  CLI::App* hardware = app.add_subcommand("hardware", "Shipped GPU spec sheets");
  add_format_option(hardware, *args);
  hardware->callback([args] {
    OutputFormat format = parse_output_format(args->format);
    nlohmann::json list = nlohmann::json::array();
    Table table({"name", "gpu", "sms", "memory", "bandwidth_TBps", "bf16_or_fp16_TFLOPS",
                 "fp8_TFLOPS", "int8_TOPS", "l2", "link_GBps"});
    for (const auto& name : known_hardware()) {
      HardwareSpec h = load_hardware(name);
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
      auto tflops = [&](DType d) {
        auto p = h.peak_flops(d);
        return p ? fmt::format("{:.1f}", *p / 1e12) : std::string("-");
      };
      double half = h.peak_flops(DType::bf16).value_or(h.peak_flops(DType::fp16).value_or(0));
      table.add_row(
          {h.name, h.display_name, std::to_string(h.sm_count), format_bytes(h.memory_bytes),
           fmt::format("{:.2f}", h.memory_bandwidth_bps / 1e12), fmt::format("{:.1f}", half / 1e12),
           tflops(DType::fp8), tflops(DType::int8), format_bytes(h.l2_bytes),
           fmt::format("{:.0f}", h.interconnect.bandwidth_bps / 1e9)});
    }
    if (format == OutputFormat::json) {
      print_json({{"hardware", list}});
    } else {
      std::cout << (format == OutputFormat::csv ? table.to_csv() : table.to_text());
    }
  });
}

}  // namespace inferlab::cli
