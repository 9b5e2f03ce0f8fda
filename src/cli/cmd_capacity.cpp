#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "cli/serve_args.hpp"
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

nlohmann::json maybe(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
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
    auto a = *args;
    OutputFormat format = parse_output_format(a.common.format);
    const CapacitySlo slo = parse_capacity_slo(a.slo);
    const auto prices = parse_prices(a.prices);
    ModelConfig model = load_model(a.common.model);
    EngineConfig engine = make_engine_config(a.serve);
    const std::unique_ptr<ModelConfig> draft = load_draft_model(a.serve);
    // The same requests at every rate: drawn at 1 request/s, or the trace's pattern at a mean
    // of 1 request/s.
    CapacityPlanRequest plan;
    plan.unit_rate_requests = make_workload(a.serve, 1.0);
    if (!a.serve.trace.empty()) normalise_to_unit_rate(plan.unit_rate_requests);
    for (const auto& t : split_list(a.tp_list)) {
      const double v = parse_number(t).value_or(0.0);
      if (v < 1 || v > 1024 || v != std::floor(v)) {
        throw InputError("--tp: '" + t + "' is not a degree in [1, 1024]");
      }
      plan.tp_degrees.push_back(static_cast<int>(v));
    }
    plan.hardware = split_list(a.hardware_list);
    if (plan.hardware.empty() || plan.tp_degrees.empty()) {
      throw InputError("--hardware and --tp need at least one value");
    }
    plan.model = model;
    plan.draft_model = draft.get();
    plan.usd_per_device_hour = prices;
    plan.cost = a.common.cost;
    plan.options = to_predict_options(a.common);
    plan.engine = engine;
    plan.slo = slo;
    const std::vector<CapacityOutcome> outcomes = plan_capacity(plan);
    if (format == OutputFormat::json) {
      nlohmann::json configs = nlohmann::json::array();
      for (const auto& c : outcomes) {
        const auto& s = c.search.at_max;
        configs.push_back({{"hardware", c.hardware},
                           {"tp", c.tp},
                           {"fits", c.fits},
                           {"note", c.note},
                           {"kv_blocks", c.kv_blocks},
                           {"max_rate_per_s", c.search.max_rate_per_s},
                           {"output_tokens_per_s", s.output_tokens_per_s},
                           {"ttft_p99_ms", s.ttft.p99_s * 1e3},
                           {"tpot_p99_ms", s.tpot.p99_s * 1e3},
                           {"usd_per_device_hour", maybe(c.usd_per_device_hour)},
                           {"usd_per_million_output_tokens", maybe(c.usd_per_million_tokens)},
                           {"simulations", c.search.simulations}});
      }
      print_json(
          {{"model", model.name},
           {"slo", {{"ttft_p99_ms", slo.ttft_p99_s * 1e3}, {"tpot_p99_ms", slo.tpot_p99_s * 1e3}}},
           {"policy", schedule_policy_name(engine.policy)},
           {"requests", plan.unit_rate_requests.size()},
           {"configurations", configs}});
      return;
    }
    Table t({"hardware", "tp", "max_rate_per_s", "output_tok_s", "ttft_p99_ms", "tpot_p99_ms",
             "usd_per_m_tokens", "note"});
    for (const auto& c : outcomes) {
      const auto& s = c.search.at_max;
      t.add_row(
          {c.hardware, std::to_string(c.tp), format_fixed(c.search.max_rate_per_s, 2),
           format_fixed(s.output_tokens_per_s, 0), format_fixed(s.ttft.p99_s * 1e3, 1),
           format_fixed(s.tpot.p99_s * 1e3, 2),
           std::isfinite(c.usd_per_million_tokens) ? format_fixed(c.usd_per_million_tokens, 3) : "",
           c.note});
    }
    std::cout << (format == OutputFormat::csv ? t.to_csv() : t.to_text());
  });
}

}  // namespace inferlab::cli
