#include "cost/engine/engine_costs.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "model/engine_blocks.hpp"
#include "util/data_dir.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"
#include "util/json_writer.hpp"

namespace inferlab {

namespace {
constexpr double kMaxEfficiency = 4.0;  // above 1: L2 serves what the model counts as HBM bytes
constexpr double kMaxTime_s = 1e-2;
constexpr double kMaxClockGain = 0.5;

double checked(const nlohmann::json& object, const std::string& key, double min_value,
               double max_value, const std::string& context, bool open_min = false) {
  const double v = require_number(object, key, context);
  if (!(open_min ? v > min_value : v >= min_value) || !(v <= max_value)) {
    throw InputError(fmt::format("{}: field '{}' = {} is outside {}{}, {}]", context, key, v,
                                 open_min ? "(" : "[", min_value, max_value));
  }
  return v;
}
}  // namespace

EngineCeilings engine_ceilings_of(const HardwareSpec& hw) {
  EngineCeilings c;
  c.memory_bandwidth_bps = hw.memory_bandwidth_bps;
  const double matrix16 =
      hw.peak_flops(DType::bf16).value_or(hw.peak_flops(DType::fp16).value_or(0.0));
  c.fp32_flops_per_s = hw.peak_flops(DType::fp32).value_or(matrix16 / 8.0);
  for (DType d : {DType::bf16, DType::fp16, DType::fp8, DType::int8}) {
    if (auto peak = hw.peak_flops(d)) c.matrix_flops_per_s[std::string(dtype_name(d))] = *peak;
  }
  c.sm_count = hw.sm_count;
  c.stream_gemv_simt = true;
  c.source = hw.name + " " + hw.ceiling_source();
  return c;
}

std::string engine_kernel_key(const std::string& kernel_class, const std::string& path,
                              const std::string& format) {
  return kernel_class + "/" + path + "/" + format;
}

std::string engine_kernel_key(const KernelTag& tag) {
  return engine_kernel_key(tag.kernel_class, tag.path, tag.format);
}

nlohmann::json engine_costs_to_json(const EngineCosts& costs) {
  nlohmann::json kernels = nlohmann::json::object();
  for (const auto& [key, k] : costs.kernels) {
    kernels[key] = {{"t0_s", k.t0_s},
                    {"compute_efficiency", k.compute_efficiency},
                    {"memory_efficiency", k.memory_efficiency},
                    {"cta_efficiency", k.cta_efficiency},
                    {"serial_fraction", k.serial_fraction},
                    {"cta_fixed_s", k.cta_fixed_s},
                    {"combine_trip_s", k.combine_trip_s},
                    {"input_kib_s", k.input_kib_s},
                    {"points", k.points},
                    {"mape", k.mape}};
  }
  nlohmann::json matrix = nlohmann::json::object();
  for (const auto& [name, peak] : costs.ceilings.matrix_flops_per_s) matrix[name] = peak;
  return {{"kind", "engine_costs"},
          {"hardware", costs.hardware},
          {"source", costs.source},
          {"ceilings",
           {{"memory_bandwidth_bps", costs.ceilings.memory_bandwidth_bps},
            {"fp32_flops_per_s", costs.ceilings.fp32_flops_per_s},
            {"matrix_flops_per_s", matrix},
            {"sm_count", costs.ceilings.sm_count},
            {"stream_gemv_peak", costs.ceilings.stream_gemv_simt ? "fp32" : "matrix"},
            {"source", costs.ceilings.source}}},
          {"steps",
           {{"profile_mark_s", costs.profile_mark_s},
            {"host_per_kernel_s", costs.host_per_kernel_s},
            {"eager_step_s", costs.eager_step_s},
            {"graph_per_kernel_s", costs.graph_per_kernel_s},
            {"graph_step_s", costs.graph_step_s},
            {"graph_programmatic_per_kernel_s", costs.graph_programmatic_per_kernel_s},
            {"matrix_clock_gain", costs.matrix_clock_gain},
            {"decode_cta_bps", costs.decode_cta_bps},
            {"sync_pass_s", costs.sync_pass_s},
            {"model_switch_per_layer_s", costs.model_switch_per_layer_s}}},
          {"kernels", kernels},
          {"fit", costs.fit_summary}};
}

EngineCosts engine_costs_from_json(const nlohmann::json& json, const std::string& context) {
  if (!json.is_object()) throw InputError(context + ": expected a JSON object");
  if (require_string(json, "kind", context) != "engine_costs") {
    throw InputError(context + ": field 'kind' must be \"engine_costs\"");
  }
  EngineCosts c;
  c.hardware = require_string(json, "hardware", context);
  c.source = require_string(json, "source", context);
  auto object = [&](const nlohmann::json& parent, const char* key,
                    const std::string& where) -> const nlohmann::json& {
    if (!parent.contains(key) || !parent[key].is_object()) {
      throw InputError(where + ": missing object '" + key + "'");
    }
    return parent[key];
  };
  const nlohmann::json& ceilings = object(json, "ceilings", context);
  const std::string cctx = context + " ceilings";
  c.ceilings.memory_bandwidth_bps = checked(ceilings, "memory_bandwidth_bps", 0, 1e15, cctx, true);
  c.ceilings.fp32_flops_per_s = checked(ceilings, "fp32_flops_per_s", 0, 1e18, cctx, true);
  c.ceilings.source = optional_string(ceilings, "source", "", cctx);
  // (Files fitted before the per-CTA term have no SM count: the term stays off for them.)
  if (ceilings.contains("sm_count")) {
    c.ceilings.sm_count = static_cast<int64_t>(checked(ceilings, "sm_count", 0, 1e5, cctx));
  }
  // (Absent from files fitted before 2026-11-28: the streaming GEMV against the matrix peak.)
  if (ceilings.contains("stream_gemv_peak")) {
    const std::string peak = require_string(ceilings, "stream_gemv_peak", cctx);
    if (peak != "fp32" && peak != "matrix") {
      throw InputError(cctx + ": field 'stream_gemv_peak' is \"" + peak +
                       "\"; known: fp32, matrix");
    }
    c.ceilings.stream_gemv_simt = peak == "fp32";
  }
  const nlohmann::json& matrix = object(ceilings, "matrix_flops_per_s", cctx);
  for (const auto& [name, value] : matrix.items()) {
    parse_dtype(name);  // an unknown dtype name is an InputError listing the known ones
    c.ceilings.matrix_flops_per_s[name] =
        checked(matrix, name, 0, 1e18, cctx + " matrix_flops_per_s", true);
  }
  const nlohmann::json& steps = object(json, "steps", context);
  const std::string sctx = context + " steps";
  c.profile_mark_s = checked(steps, "profile_mark_s", -kMaxTime_s, kMaxTime_s, sctx);
  c.host_per_kernel_s = checked(steps, "host_per_kernel_s", 0, 1e-3, sctx);
  c.eager_step_s = checked(steps, "eager_step_s", -kMaxTime_s, kMaxTime_s, sctx);
  c.graph_per_kernel_s = checked(steps, "graph_per_kernel_s", -1e-4, 1e-4, sctx);
  c.graph_step_s = checked(steps, "graph_step_s", -kMaxTime_s, kMaxTime_s, sctx);
  // (Absent from files fitted before programmatic launch was priced: none.)
  if (steps.contains("graph_programmatic_per_kernel_s")) {
    c.graph_programmatic_per_kernel_s =
        checked(steps, "graph_programmatic_per_kernel_s", -1e-4, 1e-4, sctx);
  }
  // (Absent from files fitted before the clock term: none.)
  if (steps.contains("matrix_clock_gain")) {
    c.matrix_clock_gain = checked(steps, "matrix_clock_gain", 0, kMaxClockGain, sctx);
  }
  // (Absent from files fitted before the decode straggler was priced: not priced.)
  // (Absent from files before 2026-11-28's speculation rounds: not priced.)
  if (steps.contains("sync_pass_s")) c.sync_pass_s = checked(steps, "sync_pass_s", 0, 1e-3, sctx);
  if (steps.contains("model_switch_per_layer_s")) {
    c.model_switch_per_layer_s = checked(steps, "model_switch_per_layer_s", 0, 1e-3, sctx);
  }
  if (steps.contains("decode_cta_bps")) {
    c.decode_cta_bps = checked(steps, "decode_cta_bps", 0, 1e13, sctx);
  }
  const nlohmann::json& kernels = object(json, "kernels", context);
  for (const auto& [key, k] : kernels.items()) {
    const std::string kctx = context + " kernels['" + key + "']";
    const auto slash = key.find('/');
    if (slash == std::string::npos || key.find('/', slash + 1) == std::string::npos ||
        !is_engine_kernel_class(key.substr(0, slash))) {
      throw InputError(kctx +
                       ": a key is class/path/format with a class of the engine's "
                       "profile (" +
                       join_names(kEngineKernelClasses) + ")");
    }
    EngineKernelParams p;
    p.t0_s = checked(k, "t0_s", 0, kMaxTime_s, kctx);
    p.compute_efficiency = checked(k, "compute_efficiency", 0, kMaxEfficiency, kctx, true);
    p.memory_efficiency = checked(k, "memory_efficiency", 0, kMaxEfficiency, kctx, true);
    if (k.contains("cta_efficiency")) {
      p.cta_efficiency = checked(k, "cta_efficiency", 0, kMaxEfficiency, kctx);
    }
    // (Absent from files fitted before the per-CTA fixed cost: none.)
    if (k.contains("cta_fixed_s")) p.cta_fixed_s = checked(k, "cta_fixed_s", 0, kMaxTime_s, kctx);
    // (Absent from files fitted before the combine's trips were priced: none.)
    if (k.contains("combine_trip_s")) {
      p.combine_trip_s = checked(k, "combine_trip_s", 0, kMaxTime_s, kctx);
    }
    // (Absent from files fitted before the staged input was priced: none.)
    if (k.contains("input_kib_s")) p.input_kib_s = checked(k, "input_kib_s", 0, kMaxTime_s, kctx);
    // (Absent from files fitted before the serial term: 0, the roofline's max.)
    if (k.contains("serial_fraction")) {
      p.serial_fraction = checked(k, "serial_fraction", 0, 1, kctx);
    }
    p.points = static_cast<int>(require_count(k, "points", kctx, 0, 1 << 30));
    p.mape = checked(k, "mape", 0, 1e6, kctx);
    c.kernels[key] = p;
  }
  if (json.contains("fit")) c.fit_summary = json["fit"];
  return c;
}

EngineCosts load_engine_costs_file(const std::string& path) {
  return engine_costs_from_json(read_json_file(path, "engine costs"),
                                "engine costs '" + path + "'");
}

void write_engine_costs_file(const std::string& path, const EngineCosts& costs) {
  write_json_file(path, engine_costs_to_json(costs));
}

std::optional<std::string> engine_costs_path(const std::string& choice,
                                             const std::string& hardware_name) {
  if (choice == "none") return std::nullopt;
  if (choice.empty() || choice == "auto") {
    const auto shipped = data_dir() / "engine_costs" / (hardware_name + ".json");
    if (std::filesystem::exists(shipped)) return shipped.string();
    return std::nullopt;
  }
  return choice;
}

}  // namespace inferlab
