#include "predict/framework.hpp"

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
  h.pytorch_layer_s =
      json.contains("pytorch_layer_s") ? require_number(json, "pytorch_layer_s", context) : 0.0;
  h.engine_per_kernel_s = json.contains("engine_per_kernel_s")
                              ? require_number(json, "engine_per_kernel_s", context)
                              : 0.0;
  h.pytorch_step_base_s = json.contains("pytorch_step_base_s")
                              ? require_number(json, "pytorch_step_base_s", context)
                              : 0.0;
  if (h.eager_per_kernel_s < 0 || h.eager_per_kernel_s > 1e-3 || h.graph_launch_s < 0 ||
      h.graph_launch_s > 1e-2 || h.pytorch_layer_s < 0 || h.pytorch_layer_s > 1e-1 ||
      h.pytorch_step_base_s < 0 || h.pytorch_step_base_s > 1e-1 || h.engine_per_kernel_s < 0 ||
      h.engine_per_kernel_s > 1e-3) {
    throw InputError(context + ": overheads out of range");
  }
  return h;
}

}  // namespace inferlab
