#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "predict/sweep.hpp"
#include "report/emit.hpp"
#include "report/sweep_report.hpp"

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
  add_sustained_option(cmd, args->common);
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
    emit(sweep_json(model.name, hw.spec.name, hw.sustained, rows), sweep_text(hw.sustained, rows),
         sweep_table(rows, OutputFormat::csv).to_csv(), format);
  });
}

}  // namespace inferlab::cli
