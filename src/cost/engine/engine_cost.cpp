#include "cost/engine/engine_cost.hpp"

#include <algorithm>
#include <string_view>
#include <utility>

#include "model/engine_decode_plan.hpp"
#include "model/engine_gemv_rows.hpp"
#include "util/error.hpp"

namespace inferlab {

namespace {
bool runs_on_matrix_units(OpKind kind) {
  switch (kind) {
    case OpKind::gemm:
    case OpKind::moe_gemm:
    case OpKind::attention:
    case OpKind::attention_scores:
    case OpKind::attention_context:
      return true;
    default:
      return false;
  }
}
}  // namespace

bool engine_stream_gemv_path(std::string_view path) {
  return path == "gemv" || path == "gemv_fused" || path == "gemv_fused_rope";
}

double engine_op_peak(const Op& op, const EngineCeilings& ceilings) {
  if (!runs_on_matrix_units(op.kind)) return ceilings.fp32_flops_per_s;
  // The experts' slot and grouped kernels multiply on the CUDA cores.
  if (engine_moe_cuda_core_path(op.tag.path)) return ceilings.fp32_flops_per_s;
  if (ceilings.stream_gemv_simt && engine_stream_gemv_path(op.tag.path)) {
    return ceilings.fp32_flops_per_s;
  }
  const auto& peaks = ceilings.matrix_flops_per_s;
  auto it = peaks.find(std::string(dtype_name(op.compute_dtype)));
  if (it != peaks.end()) return it->second;
  // 16-bit formats stand in for each other, as on every shipped GPU.
  for (const char* name : {"bf16", "fp16"}) {
    if (peaks.count(name)) return peaks.at(name);
  }
  throw InputError("the engine costs' ceilings have no " +
                   std::string(dtype_name(op.compute_dtype)) + " matrix peak");
}

bool engine_moe_cuda_core_path(std::string_view path) {
  return path == "moe_gemv" || path == "moe_grouped";
}

bool engine_tensor_core_path(std::string_view path) {
  return path == "gemm" || path == "flash_prefill";
}

bool engine_tensor_core_op(const Op& op) {
  return engine_tensor_core_path(op.tag.path);
}

double engine_clock_factor(double gain, double duty) {
  return 1.0 - gain * (1.0 - std::clamp(duty, 0.0, 1.0));
}

double engine_cta_stream_s(const Op& op, const EngineCeilings& ceilings) {
  if (op.grid_ctas <= 0 || ceilings.sm_count <= 0 || ceilings.memory_bandwidth_bps <= 0.0) {
    return 0.0;
  }
  const double waves_of_sms = static_cast<double>(std::max(op.grid_ctas, ceilings.sm_count));
  return op.bytes_per_cta * waves_of_sms / ceilings.memory_bandwidth_bps;
}

double engine_cta_waves(const Op& op, const EngineCeilings& ceilings) {
  if (op.grid_ctas <= 0 || op.bytes_per_cta > 0.0 || ceilings.sm_count <= 0) return 0.0;
  return static_cast<double>(op.grid_ctas) / static_cast<double>(ceilings.sm_count);
}

int64_t engine_combine_extra_trips(const Op& op, const EngineCeilings& ceilings) {
  const std::string_view path = op.tag.path;
  if ((path != "flash_decode" && path != "flash_decode_early") || ceilings.sm_count <= 0) {
    return 0;
  }
  const AttentionShape& a = op.attention;
  if (a.batch <= 0 || a.kv_heads <= 0 || a.q_heads < a.kv_heads) return 0;
  const DecodeSplitPlan plan = decode_split_plan(a.batch, a.q_heads, a.kv_heads, ceilings.sm_count,
                                                 a.kv_len, kDecodeMaxSplits);
  // Trips over the splits that hold positions: the plan is cut at the context's bucket, so past a
  // power of two up to half its splits are empty, and a trip over empty partials measured
  // 0.15-0.4 us a layer where the model had charged 1.27 (MEASUREMENTS sections 59 and 60).
  const int64_t holding =
      plan.partition > 0 ? std::min(plan.splits, (a.kv_len + plan.partition - 1) / plan.partition)
                         : plan.splits;
  return std::max<int64_t>(0, decode_combine_trips(holding) - 1);
}

double engine_staged_input_kib(const Op& op) {
  if (op.kind != OpKind::gemm || !engine_stream_gemv_path(op.tag.path)) return 0.0;
  // What the kernel stages, by the rule it checks itself (model/engine_gemv_rows.hpp): two bytes
  // an element, W8A8's int8 codes one, int4's byte planes and block sums 2.25.
  const std::string_view format = op.tag.format;
  const DType weights = format == "int4"   ? DType::int4
                        : format == "w8a8" ? DType::int8
                                           : DType::bf16;
  return static_cast<double>(
             engine_gemv_stream_staged_bytes(weights, format == "w8a8", op.gemm.m, op.gemm.k)) /
         1024.0;
}

OpCost engine_op_cost(const Op& op, const EngineKernelParams& p, const EngineCeilings& ceilings) {
  OpCost cost;
  cost.op_class = classify_op(op);
  const double peak = engine_op_peak(op, ceilings);
  cost.ideal_s = std::max(op.flops / peak, op.bytes() / ceilings.memory_bandwidth_bps);
  cost.compute_s = op.flops / (peak * p.compute_efficiency);
  cost.memory_s = op.bytes() / (ceilings.memory_bandwidth_bps * p.memory_efficiency);
  const double serial_s = engine_cta_stream_s(op, ceilings);
  if (serial_s > 0.0 && p.cta_efficiency > 0.0) {
    cost.memory_s = std::max(cost.memory_s, serial_s / p.cta_efficiency);
  }
  cost.latency_s =
      std::max(1, op.kernels) * p.t0_s + p.cta_fixed_s * engine_cta_waves(op, ceilings) +
      p.combine_trip_s * static_cast<double>(engine_combine_extra_trips(op, ceilings)) +
      std::max(1, op.kernels) * p.input_kib_s * engine_staged_input_kib(op);
  cost.serial_fraction = p.serial_fraction;
  cost.combine_parts();
  return cost;
}

std::vector<std::string> engine_key_candidates(const KernelTag& tag) {
  const std::string cls = tag.kernel_class, path = tag.path, format = tag.format;
  // The streaming GEMV's paths fall back from the most fused to the plain one:
  // gemv_fused_rope -> gemv_fused -> gemv, in the tag's format and then in bf16's; the flash
  // decode with early cache reads to the one without.
  std::vector<std::string> chain = {path};
  if (path == "gemv_fused_rope") chain.push_back("gemv_fused");
  if (path == "gemv_fused" || path == "gemv_fused_rope") chain.push_back("gemv");
  if (path == "flash_decode_early") chain.push_back("flash_decode");
  std::vector<std::string> keys;
  for (const std::string& p : chain) keys.push_back(engine_kernel_key(cls, p, format));
  // (Calibrations fitted before naive prefills had their own key price them as naive decodes.)
  if (path == "naive_prefill") keys.push_back(engine_kernel_key(cls, "naive", format));
  if (format != "bf16") {
    for (const std::string& p : chain) keys.push_back(engine_kernel_key(cls, p, "bf16"));
  }
  return keys;
}

EngineCostModel::EngineCostModel(EngineCosts costs, std::unique_ptr<CostModel> fallback,
                                 InStreamCollectives collectives)
    : costs_(std::move(costs)),
      fallback_(std::move(fallback)),
      collectives_(std::move(collectives)) {}

const CollectiveCurve* EngineCostModel::in_graph_curve(const Op& op) const {
  if (op.kind != OpKind::all_reduce && op.kind != OpKind::all_gather) return nullptr;
  const Collective kind =
      op.kind == OpKind::all_reduce ? Collective::all_reduce : Collective::all_gather;
  const bool one_shot = std::string_view(op.tag.path) == "one_shot";
  return (one_shot ? collectives_.one_shot_graph : collectives_.nccl_graph)
      .find(kind, op.comm_devices);
}

const EngineKernelParams* EngineCostModel::params_for(const KernelTag& tag,
                                                      std::string* used_key) const {
  if (tag.kernel_class[0] == '\0') return nullptr;
  for (const std::string& key : engine_key_candidates(tag)) {
    auto it = costs_.kernels.find(key);
    if (it != costs_.kernels.end()) {
      if (used_key) *used_key = key;
      return &it->second;
    }
  }
  return nullptr;
}

const CollectiveCurve* EngineCostModel::eager_curve(const Op& op) const {
  const Collective kind =
      op.kind == OpKind::all_reduce ? Collective::all_reduce : Collective::all_gather;
  const bool one_shot = std::string_view(op.tag.path) == "one_shot";
  return (one_shot ? collectives_.one_shot_eager : collectives_.nccl_eager)
      .find(kind, op.comm_devices);
}

OpCost EngineCostModel::price(const Op& op) const {
  // A collective inside the decode graph costs what the same call costs there back to back: the
  // measured curve, where the classes fitted on profiled (eager, event-bracketed) passes also
  // hold each rank's wait for the slowest. Launched eagerly (prefill), it costs what eager
  // launch adds to each call on top (eager_call_s).
  if (const CollectiveCurve* curve = in_graph_curve(op)) {
    OpCost cost;
    cost.op_class = OpClass::communication;
    cost.bound = Bound::communication;
    cost.memory_s = op.eager_launch ? eager_call_s(*curve, eager_curve(op), op.comm_bytes)
                                    : curve->call_s(op.comm_bytes);
    cost.ideal_s = cost.memory_s;
    cost.time_s = cost.memory_s;
    return cost;
  }
  const EngineKernelParams* p = params_for(op.tag, nullptr);
  if (!p) return fallback_->price(op);
  return engine_op_cost(op, *p, costs_.ceilings);
}

double EngineCostModel::isolated_time_s(const Op& op) const {
  if (!params_for(op.tag, nullptr) && !in_graph_curve(op)) return fallback_->isolated_time_s(op);
  return price(op).time_s + op.tag.marks * costs_.profile_mark_s;
}

std::optional<FittedStepCosts> EngineCostModel::fitted_step_costs() const {
  FittedStepCosts c;
  c.host_per_kernel_s = costs_.host_per_kernel_s;
  c.eager_step_s = costs_.eager_step_s;
  c.graph_per_kernel_s = costs_.graph_per_kernel_s;
  c.graph_step_s = costs_.graph_step_s;
  c.graph_programmatic_per_kernel_s = costs_.graph_programmatic_per_kernel_s;
  c.matrix_clock_gain = costs_.matrix_clock_gain;
  c.decode_cta_bps = costs_.decode_cta_bps;
  c.sync_pass_s = costs_.sync_pass_s;
  c.model_switch_per_layer_s = costs_.model_switch_per_layer_s;
  c.sm_count = costs_.ceilings.sm_count;
  return c;
}

nlohmann::json EngineCostModel::describe(const Op& op) const {
  std::string key;
  if (!params_for(op.tag, &key)) return fallback_->describe(op);
  return {{"engine_key", key}};
}

std::vector<std::string> EngineCostModel::unfitted_keys(const std::vector<Op>& ops) const {
  std::vector<std::string> out;
  for (const Op& op : ops) {
    if (op.tag.kernel_class[0] == '\0') continue;
    const std::string wanted = engine_kernel_key(op.tag);
    std::string used;
    std::string line;
    if (!params_for(op.tag, &used)) {
      line = wanted + " (priced by the " + fallback_->name() + " model)";
    } else if (used != wanted) {
      line = wanted + " (priced as " + used + ")";
    } else {
      continue;
    }
    if (std::find(out.begin(), out.end(), line) == out.end()) out.push_back(line);
  }
  return out;
}

}  // namespace inferlab
