#include <cmath>
#include <map>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "cli/serve_args.hpp"
#include "cli/slo_grammar.hpp"
#include "report/capacity_report.hpp"
#include "report/emit.hpp"
#include "serve/capacity_plan.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace inferlab::cli {

namespace {
struct CapacityArgs {
  CommonArgs common;
  ServeArgs serve;
  std::string slo, hardware_list = "h100-sxm", tp_list = "1", prices;
};

// Comma-separated names or numbers, empty items dropped.
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  for (auto& item : split_text(text, ',')) {
    if (!item.empty()) out.push_back(std::move(item));
  }
  return out;
}

std::map<std::string, double> parse_prices(const std::string& text) {
  std::map<std::string, double> prices;
  for (const auto& item : split_list(text)) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw InputError("--price: '" + item + "' is not hardware=USD");
    const double v = parse_number(item.substr(eq + 1)).value_or(0.0);
    if (!(v > 0.0) || v > 1e4) {
      throw InputError("--price " + item + ": needs USD per device-hour in (0, 10000]");
    }
    prices[item.substr(0, eq)] = v;
  }
  return prices;
}

std::vector<int> parse_tp_list(const std::string& text) {
  std::vector<int> degrees;
  for (const auto& t : split_list(text)) {
    const double v = parse_number(t).value_or(0.0);
    if (v < 1 || v > 1024 || v != std::floor(v)) {
      throw InputError("--tp: '" + t + "' is not a degree in [1, 1024]");
    }
    degrees.push_back(static_cast<int>(v));
  }
  return degrees;
}

// The plan of the flags; `draft` keeps the draft model the plan points to.
CapacityPlanRequest make_plan(const CapacityArgs& a, std::unique_ptr<ModelConfig>& draft) {
  CapacityPlanRequest plan;
  plan.slo = parse_capacity_slo(a.slo);
  plan.usd_per_device_hour = parse_prices(a.prices);
  plan.model = load_model(a.common.model);
  plan.scheduler = make_scheduler_config(a.serve, plan.model.max_position_embeddings);
  draft = load_draft_model(a.serve);
  plan.draft_model = draft.get();
  // The same requests at every rate: drawn at 1 request/s, or the trace's pattern at a mean
  // of 1 request/s.
  plan.unit_rate_requests = make_workload(a.serve, 1.0);
  if (!a.serve.trace.empty()) normalise_to_unit_rate(plan.unit_rate_requests);
  plan.tp_degrees = parse_tp_list(a.tp_list);
  plan.hardware = split_list(a.hardware_list);
  if (plan.hardware.empty() || plan.tp_degrees.empty()) {
    throw InputError("--hardware and --tp need at least one value");
  }
  plan.cost = parse_cost_method(a.common.cost);
  plan.options = to_predict_options(a.common);
  return plan;
}
}  // namespace

void register_capacity(CLI::App& app) {
  auto args = std::make_shared<CapacityArgs>();
  CLI::App* cmd = app.add_subcommand(
      "capacity",
      "Highest request rate each hardware x tensor-parallel configuration serves within a "
      "latency SLO, and its cost per million output tokens; cheapest first");
  add_model_options(cmd, args->common, true);
  add_format_option(cmd, args->common);
  cmd->add_option("--cost", args->common.cost, "Cost model: auto, roofline, calibrated, tilesim")
      ->capture_default_str();
  cmd->add_option("--framework", args->common.framework, "pytorch or vllm kernel lists")
      ->capture_default_str();
  cmd->add_option("--hardware", args->hardware_list, "Comma-separated GPUs")->capture_default_str();
  cmd->add_option("--tp", args->tp_list, "Comma-separated tensor-parallel degrees")
      ->capture_default_str();
  cmd->add_option("--price", args->prices, "USD per device-hour: h100-sxm=2.5,h200=3.5");
  cmd->add_option("--slo", args->slo, "ttft_p99=MS,tpot_p99=MS (ms, or 's' unit)")->required();
  cmd->add_option("--workload", args->serve.trace,
                  "A trace whose arrival pattern is replayed at each rate (same as --trace)");
  add_serve_options(cmd, args->serve, false);
  cmd->callback([args] {
    OutputFormat format = parse_output_format(args->common.format);
    std::unique_ptr<ModelConfig> draft;
    const CapacityPlanRequest plan = make_plan(*args, draft);
    const std::vector<CapacityOutcome> outcomes = plan_capacity(plan);
    emit(capacity_json(plan, outcomes), capacity_table(outcomes), format);
  });
}

}  // namespace inferlab::cli
