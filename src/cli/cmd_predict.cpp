#include <fmt/format.h>

#include <iostream>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "report/prediction_report.hpp"

namespace inferlab::cli {

namespace {

struct PredictArgs {
  CommonArgs common;
  int64_t batch = 1, input = 512, output = 128;
};

nlohmann::json run_info(const PredictArgs& a, const ModelConfig& model, const LoadedHardware& hw,
                        const PredictOptions& o, const StepContext& c) {
  return {{"model", model.name},
          {"hardware", hw.spec.name},
          {"hardware_source", hw.spec.ceiling_source()},
          {"cost_model", hw.cost->name()},
          {"cost_source", hw.source},
          {"batch", a.batch},
          {"input_tokens", a.input},
          {"output_tokens", a.output},
          {"weights", std::string(dtype_name(c.precision.weights))},
          {"activations", std::string(dtype_name(c.precision.activations))},
          {"kv", std::string(dtype_name(c.precision.kv))},
          {"framework", std::string(framework_name(o.framework))},
          {"cuda_graphs", o.cuda_graphs},
          {"flash_attention", o.flash_attention},
          {"tp", o.tp}};
}

void print_table(const nlohmann::json& info, const RequestPrediction& r, const HardwareSpec& hw) {
  std::cout << fmt::format(
      "inferlab predict: {} on {} ({} cost model; ceilings from the {})\n"
      "batch {}, input {}, output {}; weights {}, activations {}, KV {}; {} kernels, CUDA "
      "graphs {}, FlashAttention {}, TP {}\n\n",
      info["model"].get<std::string>(), hw.display_name, info["cost_model"].get<std::string>(),
      info["hardware_source"].get<std::string>(), info["batch"].get<int64_t>(),
      info["input_tokens"].get<int64_t>(), info["output_tokens"].get<int64_t>(),
      info["weights"].get<std::string>(), info["activations"].get<std::string>(),
      info["kv"].get<std::string>(), info["framework"].get<std::string>(),
      info["cuda_graphs"].get<bool>() ? "on" : "off",
      info["flash_attention"].get<bool>() ? "on" : "off", info["tp"].get<int>());
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
  std::cout << summary.to_text() << '\n';
  std::cout << fmt::format("Prefill step: {} ms, {} kernels\n", format_ms(r.prefill.time_s),
                           r.prefill.kernels)
            << step_table(r.prefill).to_text() << '\n';
  std::cout << fmt::format(
                   "Decode step at context {}: {} ms, {} kernels (TPOT averages {} steps)\n",
                   info["input_tokens"].get<int64_t>() + 1, format_ms(r.first_decode.time_s),
                   r.first_decode.kernels, r.decode_steps)
            << step_table(r.first_decode).to_text();
}

}  // namespace

void register_predict(CLI::App& app) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App* cmd = app.add_subcommand(
      "predict",
      "Latency, throughput and memory of one batch of requests, with a per-operator "
      "breakdown of prefill and decode");
  add_model_options(cmd, args->common);
  add_hardware_options(cmd, args->common);
  add_format_option(cmd, args->common);
  cmd->add_option("--batch", args->batch, "Sequences per batch")->capture_default_str();
  cmd->add_option("--input", args->input, "Prompt tokens per sequence")->capture_default_str();
  cmd->add_option("--output", args->output, "Generated tokens per sequence")->capture_default_str();
  cmd->callback([args] {
    const auto& a = *args;
    OutputFormat format = parse_output_format(a.common.format);
    ModelConfig model = load_model(a.common.model);
    LoadedHardware hw = load_cost_model(a.common);
    PredictOptions o = to_predict_options(a.common);
    o.batch = a.batch;
    o.input_tokens = a.input;
    o.output_tokens = a.output;
    HostOverhead host = load_host_overhead();
    StepContext context = make_step_context(model, hw.spec, *hw.cost, o, host);
    RequestPrediction r = predict_request(model, hw.spec, *hw.cost, o, host);
    nlohmann::json info = run_info(a, model, hw, o, context);
    if (format == OutputFormat::json) {
      nlohmann::json out = info;
      out.update(request_to_json(r));
      print_json(out);
    } else if (format == OutputFormat::csv) {
      std::string prefill = step_csv_table(r.prefill, "prefill").to_csv();
      std::string decode = step_csv_table(r.first_decode, "decode").to_csv();
      std::cout << prefill << decode.substr(decode.find('\n') + 1);
    } else {
      print_table(info, r, hw.spec);
    }
  });
}

}  // namespace inferlab::cli
