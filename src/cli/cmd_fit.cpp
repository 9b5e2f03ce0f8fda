#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "predict/fit_calibrated.hpp"
#include "predict/fit_delay_factors.hpp"
#include "predict/sustained_clock.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab::cli {

namespace {
struct FitArgs {
  CommonArgs common;
  std::string data, out, sustained;
};

void write_file(const std::string& path, const nlohmann::json& json) {
  if (path.empty()) return;
  std::ofstream out(path);
  if (!out) throw InputError("cannot write '" + path + "'");
  out << json.dump(2) << '\n';
}

// `fit --cost calibrated`: the calibrated model's parameters (data/calibrated/ form).
void fit_calibrated_command(const FitArgs& a, const HardwareSpec& hw,
                            const std::vector<MeasuredOp>& measured,
                            const std::vector<std::string>& sources, double isolated_floor_s,
                            OutputFormat format) {
  int held_out = 0;
  for (const auto& m : measured) held_out += m.held_out;
  // Read before the (seconds-long) fit so that a bad file fails at once.
  std::string sustained_note;
  double slowdown = 1.0;
  if (!a.sustained.empty()) {
    auto document = read_json_file(a.sustained, "sustained-clock measurement");
    SustainedSlowdown s =
        sustained_slowdown_from(document, "sustained-clock measurement '" + a.sustained + "'");
    slowdown = s.slowdown;
    sustained_note = fmt::format(
        "; sustained-compute slowdown {:.3f} = GEMM {} back to back {:.1f} us / alone {:.1f} us "
        "(SM clock {:.0f} MHz sustained, {:.0f} idle) from {} ({})",
        s.slowdown, s.shape, s.back_to_back_s * 1e6, s.alone_s * 1e6, s.sustained_mhz, s.idle_mhz,
        a.sustained, document.value("measured_at", std::string("?")));
  }
  CalibratedFit fit = fit_calibrated(hw, load_delay_factors(hw), measured, isolated_floor_s);
  fit.params[CalibParam::sustained_compute_slowdown] = slowdown;
  fit.params.source = fmt::format(
      "inferlab fit --cost calibrated --hardware {} --profile {}{}{} against {} ceilings: {}; "
      "{} held-out measurements not used{}",
      hw.name, a.common.profile, a.data.empty() ? "" : " --data " + a.data,
      a.sustained.empty() ? "" : " --sustained " + a.sustained,
      hw.profile ? "measured" : "datasheet", join_names(sources, "; "), held_out, sustained_note);
  Table table({"group", "points", "mape"});
  nlohmann::json summary = nlohmann::json::object();
  for (const auto& g : fit.groups) {
    std::string name(calib_group_name(g.group));
    summary[name] = {{"points", g.points}, {"mape", g.mape}, {"evaluations", g.evaluations}};
    table.add_row(
        {name, std::to_string(g.points), g.points ? format_fixed(100 * g.mape, 1) + "%" : "-"});
  }
  fit.params.fit_summary = summary;
  nlohmann::json file = calibrated_params_to_json(fit.params);
  write_file(a.out, file);
  if (format == OutputFormat::json) {
    print_json(file);
  } else if (format == OutputFormat::csv) {
    std::cout << table.to_csv();
  } else {
    std::cout << table.to_text();
    for (int i = 0; i < kCalibParamCount; ++i) {
      std::cout << fmt::format("  {:28s} {:.6g}\n",
                               calib_param_info(static_cast<CalibParam>(i)).name,
                               fit.params.value[i]);
    }
  }
}
}  // namespace

void register_fit(CLI::App& app) {
  auto args = std::make_shared<FitArgs>();
  CLI::App* cmd = app.add_subcommand(
      "fit",
      "Fit the cost model to measured operators (validation/torch_reference.py): --cost "
      "roofline fits delay factors, --cost calibrated the calibrated model");
  add_hardware_options(cmd, args->common);
  add_format_option(cmd, args->common);
  cmd->add_option("--data", args->data,
                  "Operators measured with PyTorch (validation/torch_reference.py output)");
  cmd->add_option("--out", args->out,
                  "Write the fitted file (data/delay_factors/ or data/calibrated/ form)");
  cmd->add_option("--sustained", args->sustained,
                  "With --cost calibrated: GEMM clock under sustained load "
                  "(validation/sustained_clock.py output)");
  cmd->callback([args] {
    const auto& a = *args;
    OutputFormat format = parse_output_format(a.common.format);
    // Ceilings: the measured profile when one is used (its sweeps are fitted too), else the
    // spec sheet. The factors are relative to whichever ceilings the model will use.
    HardwareSpec hw = load_hardware(a.common.hardware, a.common.profile);
    DelayFactors start = load_spec_delay_factors();
    std::vector<MeasuredOp> measured;
    std::vector<std::string> sources;
    double reference_floor_s = 0.0;
    if (!a.data.empty()) {
      auto reference = read_json_file(a.data, "measured reference");
      auto ops = measured_ops_from_reference(reference, "measured reference '" + a.data + "'");
      reference_floor_s = fastest_measured_s(ops);
      measured.insert(measured.end(), ops.begin(), ops.end());
      std::string device = reference.contains("device") && reference["device"].contains("name")
                               ? reference["device"]["name"].get<std::string>()
                               : "unknown device";
      sources.push_back(fmt::format("{} PyTorch operators from {} ({}, {})", ops.size(), a.data,
                                    device, reference.value("measured_at", std::string("?"))));
      if (reference.contains("launch")) {
        start.kernel_latency_s =
            require_number(reference["launch"], "graph_per_kernel_s", "measured reference launch");
      }
    }
    if (hw.profile) {
      auto ops = measured_ops_from_profile(hw.profile->document,
                                           "hardware profile '" + hw.profile->path + "'");
      measured.insert(measured.end(), ops.begin(), ops.end());
      sources.push_back(fmt::format("{} probe sweep points from {} ({})", ops.size(),
                                    hw.profile->path, hw.profile->measured_at));
      // The fixed cost per kernel: a small real kernel's time inside a graph where the profile
      // measured it, else the empty-kernel gap (a lower bound).
      start.kernel_latency_s = hw.profile->graph_small_kernel_s > 0.0
                                   ? hw.profile->graph_small_kernel_s
                                   : hw.profile->graph_kernel_gap_s;
    }
    if (measured.empty()) {
      throw InputError("nothing to fit: give --data, or a --hardware with a measured profile");
    }
    if (a.common.cost == "calibrated") {
      fit_calibrated_command(a, hw, measured, sources, reference_floor_s, format);
      return;
    }
    if (a.common.cost != "roofline" && a.common.cost != kCostAuto) {
      throw InputError("fit --cost takes roofline (delay factors) or calibrated, got '" +
                       a.common.cost + "'");
    }
    std::vector<MeasuredOp> fitted;  // the held-out split is never fitted
    for (const auto& m : measured) {
      if (!m.held_out) fitted.push_back(m);
    }
    DelayFactorFit fit = fit_delay_factors(hw, start, fitted);
    fit.factors.source = fmt::format(
        "inferlab fit --hardware {} --profile {}{} against {} ceilings: {}; classes without "
        "points keep data/delay_factors/spec.json",
        hw.name, a.common.profile, a.data.empty() ? "" : " --data " + a.data,
        hw.profile ? "measured" : "datasheet", join_names(sources, "; "));
    nlohmann::json factors = nlohmann::json::object();
    nlohmann::json classes = nlohmann::json::object();
    Table table({"class", "points", "factor", "mape", "worst_error"});
    for (int i = 0; i < kOpClassCount; ++i) {
      auto cls = static_cast<OpClass>(i);
      std::string name(op_class_name(cls));
      factors[name] = fit.factors.of(cls);
      const ClassFit& cf = fit.classes[i];
      classes[name] = {{"points", cf.points},
                       {"factor", fit.factors.of(cls)},
                       {"mape", cf.mape},
                       {"worst_error", cf.worst_error}};
      table.add_row({name, std::to_string(cf.points), format_fixed(fit.factors.of(cls), 3),
                     cf.points ? format_fixed(100 * cf.mape, 1) + "%" : "-",
                     cf.points ? format_fixed(100 * cf.worst_error, 1) + "%" : "-"});
    }
    nlohmann::json file = {{"source", fit.factors.source},
                           {"kernel_latency_s", fit.factors.kernel_latency_s},
                           {"gemv_max_rows", fit.factors.gemv_max_rows},
                           {"single_op_floor_s", fit.single_op_floor_s},
                           {"factors", factors},
                           {"fit", classes}};
    write_file(a.out, file);
    if (format == OutputFormat::json) {
      print_json(file);
    } else {
      std::cout << (format == OutputFormat::csv ? table.to_csv() : table.to_text());
    }
  });
}

}  // namespace inferlab::cli
