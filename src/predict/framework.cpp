#include "predict/framework.hpp"

#include <fmt/format.h>

#include "util/data_dir.hpp"
#include "util/enum_names.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab {

namespace {
constexpr EnumNameTable<Framework, 3> kFrameworkNames = {{
    {Framework::pytorch, "pytorch"},
    {Framework::vllm, "vllm"},
    {Framework::inferlab, "inferlab"},
}};
}  // namespace

Framework parse_framework(std::string_view name) {
  return parse_enum(kFrameworkNames, name, "framework");
}

std::string_view framework_name(Framework framework) {
  return enum_name(kFrameworkNames, framework);
}

KernelPlan kernel_plan(Framework framework, bool flash_attention, bool gemv, bool fusion) {
  KernelPlan plan;
  plan.flash_attention = flash_attention;
  if (framework == Framework::inferlab) {
    plan.engine = true;
    plan.engine_gemv = gemv;
    plan.engine_fusion = fusion;
  }
  if (framework == Framework::pytorch) {
    plan.fuse_qkv = false;
    plan.fuse_gate_up = false;
    plan.fuse_add_rmsnorm = false;
    plan.fuse_silu_mul = false;
    plan.fuse_rope_kv_write = false;
    plan.rope_kernels_per_tensor = 5;  // x*cos, neg of half, cat, rot*sin, add
    plan.kv_write_kernels = 2;         // K and V index_copy_
    plan.rope_table_gathers = 2;       // cos[pos], sin[pos]
  }
  return plan;
}

KernelPlan with_projection_layout(KernelPlan plan, std::string_view layout) {
  if (layout.empty() || layout == "separate") return plan;
  if (layout == "fused_qkv_gate_up") {
    plan.fuse_qkv = true;
    plan.fuse_gate_up = true;
    return plan;
  }
  throw InputError("unknown projection layout '" + std::string(layout) +
                   "'; known: separate, fused_qkv_gate_up");
}

HostOverhead load_host_overhead(const std::string& path) {
  auto file = path.empty() ? data_dir() / "host_overhead.json" : std::filesystem::path(path);
  auto json = read_json_file(file, "host overhead");
  const std::string context = "host overhead '" + file.string() + "'";
  HostOverhead h;
  h.eager_per_kernel_s = require_number(json, "eager_per_kernel_s", context);
  h.graph_launch_s = require_number(json, "graph_launch_s", context);
  h.source = require_string(json, "source", context);
  h.pytorch_layer_s = optional_number(json, "pytorch_layer_s", 0.0, context);
  h.engine_per_kernel_s = optional_number(json, "engine_per_kernel_s", 0.0, context);
  h.pytorch_step_base_s = optional_number(json, "pytorch_step_base_s", 0.0, context);
  if (h.eager_per_kernel_s < 0 || h.eager_per_kernel_s > 1e-3 || h.graph_launch_s < 0 ||
      h.graph_launch_s > 1e-2 || h.pytorch_layer_s < 0 || h.pytorch_layer_s > 1e-1 ||
      h.pytorch_step_base_s < 0 || h.pytorch_step_base_s > 1e-1 || h.engine_per_kernel_s < 0 ||
      h.engine_per_kernel_s > 1e-3) {
    throw InputError(context + ": overheads out of range");
  }
  if (json.contains("rule")) {
    const auto& rule = json.at("rule");
    const std::string rule_context = context + " rule";
    h.pytorch_layer_dispatches =
        optional_number(rule, "pytorch_layer_dispatches", 0.0, rule_context);
    h.pytorch_step_base_dispatches =
        optional_number(rule, "pytorch_step_base_dispatches", 0.0, rule_context);
    h.dispatch_per_cpu_dispatch =
        optional_number(rule, "dispatch_per_cpu_dispatch", 0.0, rule_context);
    if (h.pytorch_layer_dispatches < 0 || h.pytorch_layer_dispatches > 1e4 ||
        h.pytorch_step_base_dispatches < 0 || h.pytorch_step_base_dispatches > 1e4 ||
        h.dispatch_per_cpu_dispatch < 0 || h.dispatch_per_cpu_dispatch > 1e4) {
      throw InputError(rule_context + ": constants out of range");
    }
  }
  h.host_source =
      "today's constants (" + file.filename().string() + "), not derived from a host measurement";
  return h;
}

std::optional<HostOverhead> derive_host_overhead(const HostOverhead& constants,
                                                 const HostProfile& host) {
  if (!(host.launch_s > 0.0)) return std::nullopt;
  double dispatch_s = 0.0;
  std::string from;
  if (host.torch_op_s > host.launch_s) {
    dispatch_s = host.torch_op_s - host.launch_s;
    from = fmt::format("PyTorch op {:.2f} us - launch {:.2f} us", host.torch_op_s * 1e6,
                       host.launch_s * 1e6);
  } else if (host.cpu_dispatch_s > 0.0 && constants.dispatch_per_cpu_dispatch > 0.0) {
    dispatch_s = constants.dispatch_per_cpu_dispatch * host.cpu_dispatch_s;
    from = fmt::format("{:.3g} x CPU dispatch {:.1f} ns", constants.dispatch_per_cpu_dispatch,
                       host.cpu_dispatch_s * 1e9);
  } else {
    return std::nullopt;
  }
  HostOverhead h = constants;
  h.dispatch_s = dispatch_s;
  h.launch_s = host.launch_s;
  h.eager_per_kernel_s = dispatch_s + host.launch_s;
  if (host.graph_launch_s > 0.0) h.graph_launch_s = host.graph_launch_s;
  h.host_source = fmt::format(
      "host rule on measured host {} ({}{}): dispatch {:.2f} us/op ({}), launch {:.2f} us/kernel, "
      "graph launch {:.2f} us",
      host.path, host.device_name.empty() ? std::string() : host.device_name + ", ",
      host.measured_at, dispatch_s * 1e6, from, host.launch_s * 1e6, h.graph_launch_s * 1e6);
  return h;
}

HostOverhead host_overhead_for(const std::string& hardware, const std::string& host) {
  HostOverhead constants = load_host_overhead();
  if (host == "none") return constants;
  if (host == kHostAuto) {
    std::optional<HostProfile> shipped = shipped_host_profile(hardware);
    std::optional<HostOverhead> derived;
    if (shipped) derived = derive_host_overhead(constants, *shipped);
    if (derived) return *derived;
    constants.host_source =
        "PLACEHOLDER: " +
        (shipped
             ? "data/hosts/" + hardware + ".json lacks a launch or dispatch figure"
             : "no host measurement for '" + hardware + "' (data/hosts/" + hardware + ".json)") +
        "; today's constants of the H100 host (data/host_overhead.json) stand in: measure the "
        "host with validation/host_gpu.sh";
    return constants;
  }
  const HostProfile measured = load_host_profile(host);
  std::optional<HostOverhead> derived = derive_host_overhead(constants, measured);
  if (!derived) {
    throw InputError("host profile '" + host +
                     "' has no launch_us and torch_op_us (nor a CPU dispatch figure the rule "
                     "can convert) to derive host costs from; merge validation/host_dispatch.py's "
                     "output into it");
  }
  return *derived;
}

std::optional<EagerHostPerKernel> pytorch_eager_host(const HostOverhead& host, int64_t layers,
                                                     double layer_kernels, double other_kernels) {
  if (!(host.dispatch_s > 0.0) || !(host.pytorch_layer_dispatches > 0.0) || !(layer_kernels > 0)) {
    return std::nullopt;
  }
  const double layer_host_s =
      host.pytorch_layer_dispatches * host.dispatch_s * static_cast<double>(layers) +
      layer_kernels * host.launch_s;
  const double other_host_s =
      host.pytorch_step_base_dispatches * host.dispatch_s + other_kernels * host.launch_s;
  return EagerHostPerKernel{layer_host_s / layer_kernels,
                            other_kernels > 0 ? other_host_s / other_kernels : 0.0};
}

}  // namespace inferlab
