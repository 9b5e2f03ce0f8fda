#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/common_args.hpp"
#include "engine/collective_curves.hpp"
#include "engine/cuda_backend.hpp"
#include "model/model_config.hpp"
#include "probe/probe.hpp"
#include "util/error.hpp"

namespace inferlab::cli {

namespace {
struct ProbeArgs {
  CommonArgs common;
  std::string out;
  std::vector<std::string> models;
  bool quick = false;
  bool collectives_only = false;
  bool host_only = false;
  int device = 0;
};

double at(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* node = &j;
  for (const char* key : path) {
    if (!node->contains(key)) return 0.0;
    node = &(*node)[key];
  }
  return node->is_number() ? node->get<double>() : 0.0;
}

// Everything a run needs, checked before anything is measured: the output is writable (and not
// left behind empty) and every --model loads.
ProbeOptions checked_probe_options(const ProbeArgs& args) {
  bool existed = std::filesystem::exists(args.out);
  if (!std::ofstream(args.out, std::ios::app)) throw InputError("cannot write '" + args.out + "'");
  if (!existed) std::filesystem::remove(args.out);
  ProbeOptions options{args.quick, args.device, {}};
  for (const std::string& name : args.models) {
    auto layer = probe::model_projections(name, load_model(name));
    options.projections.insert(options.projections.end(), layer.begin(), layer.end());
  }
  return options;
}
void write_collectives_only(const ProbeArgs& args) {
  checked_probe_options(args);
  nlohmann::json collectives = engine::measure_engine_collectives(args.quick);
  if (collectives.is_null()) {
    throw InputError(
        "--collectives-only: this machine has fewer than two CUDA GPUs, or this "
        "build has no NCCL");
  }
  nlohmann::json profile = {{"device", {{"name", engine::cuda_device_name()}}},
                            {"collectives", std::move(collectives)}};
  std::ofstream(args.out) << profile.dump(1) << '\n';
  std::cout << "collectives of " << profile["collectives"]["points"].size() << " sizes written to "
            << args.out << '\n';
}
// --host-only: the host's launch costs and CPU dispatch figure, as a host file.
void write_host_only(const ProbeArgs& args, OutputFormat format) {
  nlohmann::json host_file = run_host_probe(checked_probe_options(args), std::cerr);
  std::ofstream(args.out) << host_file.dump(1) << '\n';
  if (format == OutputFormat::json) {
    print_json(host_file);
    return;
  }
  const nlohmann::json& h = host_file["host"];
  Table t({"figure", "measured"});
  t.add_row({"device", host_file["device"]["name"].get<std::string>()});
  t.add_row({"kernel launch (host)", fmt::format("{:.2f} us", at(h, {"launch_us"}))});
  t.add_row({"graph launch (host)", fmt::format("{:.2f} us", at(h, {"graph_launch_us"}))});
  t.add_row({"CPU dispatch workload", fmt::format("{:.1f} ns/op", at(h, {"cpu_dispatch_ns"}))});
  std::cout << (format == OutputFormat::csv ? t.to_csv() : t.to_text());
  std::cout << "host file written to " << args.out
            << " (merge PyTorch's dispatch cost: python3 validation/host_dispatch.py --merge "
            << args.out << ")\n";
}
}  // namespace

void register_probe(CLI::App& app) {
  auto args = std::make_shared<ProbeArgs>();
  CLI::App* cmd =
      app.add_subcommand("probe", "Measure this machine's GPU and write a hardware profile (JSON)");
  cmd->add_option("--out", args->out, "Profile file to write")->required();
  cmd->add_flag("--quick", args->quick, "Fewer shapes and repeats (under a minute on an H100)");
  cmd->add_option("--device", args->device, "CUDA device index")->capture_default_str();
  cmd->add_flag("--collectives-only", args->collectives_only,
                "Measure only the engine's collectives over groups of 2, 4, ... GPUs (a profile "
                "with its \"collectives\" section alone)");
  cmd->add_flag("--host-only", args->host_only,
                "Measure only the host: cudaLaunchKernel and cudaGraphLaunch costs and a "
                "Python-free CPU dispatch workload (a host file for `validate --host`; seconds)");
  cmd->add_option("--model", args->models,
                  "Sweep this model's projections (name or config.json; repeatable) instead of "
                  "the probe's own shapes");
  add_format_option(cmd, args->common);
  cmd->callback([args] {
    OutputFormat format = parse_output_format(args->common.format);
    if (args->collectives_only && args->host_only) {
      throw InputError("--collectives-only and --host-only measure different things; pick one");
    }
    if (args->host_only) {
      write_host_only(*args, format);
      return;
    }
    if (args->collectives_only) {
      write_collectives_only(*args);
      return;
    }
    nlohmann::json profile = run_probe(checked_probe_options(*args), std::cerr);
    // The collectives as the engine runs them (NCCL and the one-shot kernel, eager and in a
    // graph): what a tensor-parallel step pays, where the interconnect section's group calls
    // from the host also pay launch and synchronization.
    if (nlohmann::json collectives = engine::measure_engine_collectives(args->quick);
        !collectives.is_null()) {
      profile["collectives"] = std::move(collectives);
    }
    std::ofstream(args->out) << profile.dump(1) << '\n';
    if (format == OutputFormat::json) {
      print_json(profile);
      return;
    }
    Table t({"figure", "measured"});
    auto tflops = [&](const char* key) {
      return fmt::format("{:.1f} TFLOP/s", at(profile, {"compute", key, "flops_per_s"}) / 1e12);
    };
    auto tbps = [&](const char* level, const char* kind) {
      return fmt::format("{:.2f} TB/s", at(profile, {"memory", level, kind}) / 1e12);
    };
    t.add_row({"device", profile["device"]["name"].get<std::string>()});
    for (const char* key : {"fp64_simt", "fp32_simt", "fp16_simt", "bf16_simt", "tf32_tensor",
                            "fp16_tensor", "bf16_tensor", "fp8_tensor", "int8_tensor"}) {
      t.add_row({key, tflops(key)});
    }
    for (const char* level : {"hbm", "l2", "shared"}) {
      t.add_row({std::string(level) + " read / write / copy", tbps(level, "read_bps") + " / " +
                                                                  tbps(level, "write_bps") + " / " +
                                                                  tbps(level, "copy_bps")});
      t.add_row({std::string(level) + " latency",
                 fmt::format("{:.0f} ns", at(profile, {"memory", level, "latency_ns"}))});
    }
    t.add_row(
        {"kernel launch (host)", fmt::format("{:.2f} us", at(profile, {"launch_overhead_us"}))});
    t.add_row(
        {"back-to-back kernel gap", fmt::format("{:.2f} us", at(profile, {"kernel_gap_us"}))});
    t.add_row({"kernel gap in a CUDA graph",
               fmt::format("{:.2f} us", at(profile, {"graph_kernel_gap_us"}))});
    t.add_row({"small kernel in a CUDA graph",
               fmt::format("{:.2f} us", at(profile, {"graph_small_kernel_us"}))});
    t.add_row({"graph launch (host)",
               fmt::format("{:.2f} us", at(profile, {"graph_launch_overhead_us"}))});
    t.add_row({"GEMM sweep points", std::to_string(profile["sweeps"]["gemm"].size())});
    t.add_row({"LLM kernel sweep points", std::to_string(profile["sweeps"]["llm_kernels"].size())});
    std::cout << (format == OutputFormat::csv ? t.to_csv() : t.to_text());
    std::cout << "profile written to " << args->out << '\n';
  });
}

}  // namespace inferlab::cli
