#include "hw/profile.hpp"

#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab {

namespace {

const nlohmann::json& object_at(const nlohmann::json& j, const char* key,
                                const std::string& context) {
  if (!j.is_object() || !j.contains(key) || !j.at(key).is_object()) {
    throw InputError(context + ": missing object '" + key + "'");
  }
  return j.at(key);
}

double positive(const nlohmann::json& j, const char* key, const std::string& context) {
  double v = require_number(j, key, context);
  if (!(v > 0.0)) throw InputError(context + ": '" + key + "' must be positive");
  return v;
}

}  // namespace

MeasuredProfile load_profile(const std::string& path) {
  return parse_profile(read_json_file(path, "hardware profile"), path);
}

MeasuredProfile parse_profile(nlohmann::json document, const std::string& path) {
  MeasuredProfile p;
  p.path = path;
  p.document = std::move(document);
  const std::string ctx = "hardware profile '" + path + "'";
  const auto& doc = p.document;
  const auto& device = object_at(doc, "device", ctx);
  p.device_name = require_string(device, "name", ctx + " device");
  p.sm_count = static_cast<int>(require_count(device, "sm_count", ctx + " device", 1, 100000));
  p.measured_at = require_string(doc, "measured_at", ctx);

  const auto& compute = object_at(doc, "compute", ctx);
  const std::pair<const char*, DType> peaks[] = {
      {"fp32_simt", DType::fp32},   {"tf32_tensor", DType::tf32}, {"fp16_tensor", DType::fp16},
      {"bf16_tensor", DType::bf16}, {"fp8_tensor", DType::fp8},   {"int8_tensor", DType::int8}};
  for (auto [key, dtype] : peaks) {
    if (compute.contains(key)) {
      p.peak_flops_per_s[static_cast<int>(dtype)] = positive(
          object_at(compute, key, ctx + " compute"), "flops_per_s", ctx + " compute." + key);
    }
  }
  if (!p.peak_flops_per_s[static_cast<int>(DType::bf16)] &&
      !p.peak_flops_per_s[static_cast<int>(DType::fp16)]) {
    throw InputError(ctx + ": needs compute.bf16_tensor or compute.fp16_tensor");
  }

  const auto& memory = object_at(doc, "memory", ctx);
  const auto& hbm = object_at(memory, "hbm", ctx + " memory");
  p.hbm_read_bps = positive(hbm, "read_bps", ctx + " memory.hbm");
  p.hbm_write_bps = positive(hbm, "write_bps", ctx + " memory.hbm");
  p.hbm_copy_bps = positive(hbm, "copy_bps", ctx + " memory.hbm");
  p.hbm_latency_s = positive(hbm, "latency_ns", ctx + " memory.hbm") * 1e-9;
  const auto& l2 = object_at(memory, "l2", ctx + " memory");
  p.l2_read_bps = positive(l2, "read_bps", ctx + " memory.l2");
  p.l2_latency_s = positive(l2, "latency_ns", ctx + " memory.l2") * 1e-9;
  p.shared_read_bps =
      positive(object_at(memory, "shared", ctx + " memory"), "read_bps", ctx + " memory.shared");
  p.graph_kernel_gap_s = positive(doc, "graph_kernel_gap_us", ctx) * 1e-6;
  p.launch_overhead_s = positive(doc, "launch_overhead_us", ctx) * 1e-6;
  p.graph_small_kernel_s = optional_number(doc, "graph_small_kernel_us", 0.0, ctx) * 1e-6;
  if (doc.contains("interconnect")) {
    p.collectives = parse_collective_curves(doc.at("interconnect"), ctx + " interconnect");
  }
  if (doc.contains("collectives")) {
    p.in_stream_collectives =
        parse_in_stream_collectives(doc.at("collectives"), ctx + " collectives");
  }
  return p;
}

}  // namespace inferlab
