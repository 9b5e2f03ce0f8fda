#include "hw/hardware_spec.hpp"

#include <filesystem>

#include "util/data_dir.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab {

std::vector<std::string> HardwareSpec::supported_dtype_names() const {
  std::vector<std::string> names;
  for (DType d : kAllDTypes) {
    if (supports(d)) names.emplace_back(dtype_name(d));
  }
  return names;
}

namespace {

// A sourced figure: {"value": <number>, "source": "<where it came from>"}.
double sourced(const nlohmann::json& sheet, const std::string& key, const std::string& context,
               HardwareSpec& spec, double min_value, double max_value) {
  if (!sheet.contains(key)) throw InputError(context + ": missing field '" + key + "'");
  const auto& entry = sheet.at(key);
  const std::string where = context + " field '" + key + "'";
  if (!entry.is_object()) {
    throw InputError(where + " must be {\"value\": number, \"source\": \"...\"}");
  }
  double value = require_number(entry, "value", where);
  std::string source = require_string(entry, "source", where);
  if (source.empty()) throw InputError(where + ": empty source");
  if (!(value >= min_value && value <= max_value)) {
    throw InputError(where + ": value " + std::to_string(value) + " is outside [" +
                     std::to_string(min_value) + ", " + std::to_string(max_value) + "]");
  }
  spec.sources.emplace_back(key, source);
  return value;
}

}  // namespace

std::string HardwareSpec::ceiling_source() const {
  if (!profile) return "spec sheet";
  return "measured profile " + profile->path + " (" + profile->measured_at + ")";
}

void apply_profile(HardwareSpec& spec, MeasuredProfile profile) {
  spec.datasheet_peak_flops_per_s = spec.peak_flops_per_s;
  spec.datasheet_memory_bandwidth_bps = spec.memory_bandwidth_bps;
  for (int i = 0; i < kDTypeCount; ++i) {
    if (profile.peak_flops_per_s[i]) spec.peak_flops_per_s[i] = profile.peak_flops_per_s[i];
  }
  spec.memory_bandwidth_bps = profile.hbm_read_bps;
  spec.sm_count = profile.sm_count;
  spec.profile = std::move(profile);
}

namespace {
HardwareSpec load_sheet(const std::string& name_or_path) {
  auto path = resolve_data_file(name_or_path, "hardware", "hardware");
  return parse_hardware_sheet(read_json_file(path, "hardware sheet"),
                              "hardware sheet '" + path.string() + "'");
}
}  // namespace

HardwareSpec load_hardware(const std::string& name_or_path, const std::string& profile) {
  HardwareSpec spec = load_sheet(name_or_path);
  spec.datasheet_peak_flops_per_s = spec.peak_flops_per_s;
  spec.datasheet_memory_bandwidth_bps = spec.memory_bandwidth_bps;
  if (profile == kProfileNone) return spec;
  if (profile == kProfileAuto) {
    auto shipped = data_dir() / "profiles" / (spec.name + ".json");
    std::error_code ec;
    if (std::filesystem::is_regular_file(shipped, ec)) {
      MeasuredProfile measured = load_profile(shipped.string());
      measured.path = "data/profiles/" + spec.name + ".json";  // shown to users: the shipped file
      apply_profile(spec, std::move(measured));
    }
    return spec;
  }
  apply_profile(spec, load_profile(profile));
  return spec;
}

HardwareSpec parse_hardware_sheet(const nlohmann::json& sheet, const std::string& context) {
  HardwareSpec spec;
  spec.name = require_string(sheet, "name", context);
  spec.display_name = require_string(sheet, "display_name", context);
  spec.vendor = require_string(sheet, "vendor", context);
  spec.architecture = require_string(sheet, "architecture", context);
  spec.memory_type = require_string(sheet, "memory_type", context);
  spec.sm_count = static_cast<int>(sourced(sheet, "sm_count", context, spec, 1, 10000));
  spec.boost_clock_hz = sourced(sheet, "boost_clock_hz", context, spec, 1e8, 1e10);
  spec.l2_bytes = sourced(sheet, "l2_bytes", context, spec, 1e5, 1e10);
  spec.memory_bytes = sourced(sheet, "memory_bytes", context, spec, 1e8, 1e14);
  spec.memory_bandwidth_bps = sourced(sheet, "memory_bandwidth_bps", context, spec, 1e9, 1e15);

  if (!sheet.contains("peak_flops_per_s") || !sheet.at("peak_flops_per_s").is_object()) {
    throw InputError(context + ": missing object 'peak_flops_per_s'");
  }
  const auto& peaks = sheet.at("peak_flops_per_s");
  for (const auto& [dtype_key, entry] : peaks.items()) {
    DType dtype = parse_dtype(dtype_key);
    nlohmann::json wrapper = {{dtype_key, entry}};
    spec.peak_flops_per_s[static_cast<int>(dtype)] =
        sourced(wrapper, dtype_key, context + " peak_flops_per_s", spec, 1e9, 1e18);
  }
  if (!spec.supports(DType::fp16) && !spec.supports(DType::bf16)) {
    throw InputError(context + ": peak_flops_per_s needs at least fp16 or bf16");
  }

  if (!sheet.contains("interconnect") || !sheet.at("interconnect").is_object()) {
    throw InputError(context + ": missing object 'interconnect'");
  }
  const auto& link = sheet.at("interconnect");
  spec.interconnect.kind = require_string(link, "kind", context + " interconnect");
  spec.interconnect.bandwidth_bps =
      sourced(link, "bandwidth_bps", context + " interconnect", spec, 1e9, 1e14);
  spec.interconnect.latency_s =
      sourced(link, "latency_s", context + " interconnect", spec, 1e-7, 1e-3);
  return spec;
}

std::vector<std::string> known_hardware() {
  return data_names("hardware");
}

}  // namespace inferlab
