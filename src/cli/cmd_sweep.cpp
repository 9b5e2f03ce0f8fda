#include <fmt/format.h>

#include <iostream>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "predict/sweep.hpp"

namespace inferlab::cli {

namespace {
struct SweepArgs {
  CommonArgs common;
  std::vector<int64_t> batch{1}, input{512}, output{128};
  std::vector<int> tp{1};
  std::vector<std::string> weights;
};
}  // namespace

void register_sweep(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "predict over the cross product of comma-separated lists, one row per point");
  add_model_options(cmd, args->common, /*swept_elsewhere=*/true);
  add_hardware_options(cmd, args->common);
  add_format_option(cmd, args->common);
  cmd->add_option("--batch", args->batch, "Batch sizes, e.g. 1,8,32")->delimiter(',');
  cmd->add_option("--input", args->input, "Prompt lengths")->delimiter(',');
  cmd->add_option("--output", args->output, "Output lengths")->delimiter(',');
  cmd->add_option("--tp", args->tp, "Tensor-parallel degrees")->delimiter(',');
  cmd->add_option("--weights", args->weights, "Weight formats, e.g. bf16,int8,int4")
      ->delimiter(',');
  cmd->callback([args] {
    const auto& a = *args;
    OutputFormat format = parse_output_format(a.common.format);
    ModelConfig model = load_model(a.common.model);
    LoadedHardware hw = load_cost_model(a.common);
    PredictOptions base = to_predict_options(a.common);
    SweepGrid grid{a.batch, a.input, a.output, a.tp, {}};
    for (const auto& w : a.weights) grid.weights.push_back(parse_dtype(w));
    if (grid.weights.empty()) {
      grid.weights.push_back(hw.spec.supports(DType::bf16) ? DType::bf16 : DType::fp16);
    }
    auto rows = run_sweep(model, hw.spec, *hw.cost, base, load_host_overhead(), grid);
    if (format == OutputFormat::json) {
      nlohmann::json out = {{"model", model.name}, {"hardware", hw.spec.name}};
      nlohmann::json list = nlohmann::json::array();
      for (const auto& r : rows) {
        list.push_back({{"batch", r.batch},
                        {"input_tokens", r.input},
                        {"output_tokens", r.output},
                        {"tp", r.tp},
                        {"weights", std::string(dtype_name(r.weights))},
                        {"prefill_ms", r.prefill_s * 1e3},
                        {"ttft_ms", r.prefill_s * 1e3},
                        {"tpot_ms", r.tpot_s * 1e3},
                        {"e2e_ms", r.e2e_s * 1e3},
                        {"decode_tokens_per_s", r.decode_tokens_per_s},
                        {"memory_total_bytes", r.memory_total_bytes},
                        {"fits", r.fits}});
      }
      out["rows"] = list;
      print_json(out);
      return;
    }
    Table table({"batch", "input", "output", "tp", "weights", "prefill_ms", "tpot_ms", "e2e_ms",
                 "decode_tok_per_s", "memory_bytes", "fits"});
    bool csv = format == OutputFormat::csv;
    for (const auto& r : rows) {
      table.add_row(
          {std::to_string(r.batch), std::to_string(r.input), std::to_string(r.output),
           std::to_string(r.tp), std::string(dtype_name(r.weights)),
           csv ? fmt::format("{:.6g}", r.prefill_s * 1e3) : format_ms(r.prefill_s),
           csv ? fmt::format("{:.6g}", r.tpot_s * 1e3) : format_ms(r.tpot_s),
           csv ? fmt::format("{:.6g}", r.e2e_s * 1e3) : format_ms(r.e2e_s),
           fmt::format("{:.1f}", r.decode_tokens_per_s),
           csv ? fmt::format("{:.6g}", r.memory_total_bytes) : format_bytes(r.memory_total_bytes),
           r.fits ? "yes" : "no"});
    }
    std::cout << (csv ? table.to_csv() : table.to_text());
  });
}

}  // namespace inferlab::cli
