#include "hw/hardware_template.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cmath>

#include "hw/hardware_spec.hpp"
#include "hw/memory_technology.hpp"
#include "util/data_dir.hpp"
#include "util/enum_names.hpp"
#include "util/error.hpp"
#include "util/field_error.hpp"
#include "util/json_file.hpp"

namespace inferlab {

namespace {
constexpr EnumNameTable<MemoryType, 7> kMemoryNames = {{
    {MemoryType::hbm2, "HBM2"},
    {MemoryType::hbm2e, "HBM2e"},
    {MemoryType::hbm3, "HBM3"},
    {MemoryType::hbm3e, "HBM3e"},
    {MemoryType::gddr6, "GDDR6"},
    {MemoryType::lpddr5, "LPDDR5"},
    {MemoryType::ddr5, "DDR5"},
}};
constexpr EnumNameTable<Topology, 3> kTopologyNames = {{
    {Topology::ring, "ring"},
    {Topology::fully_connected, "fully_connected"},
    {Topology::switched, "switch"},
}};
// In KernelKind order.
constexpr EnumNameTable<KernelKind, kKernelKindCount> kKernelKindNames = {{
    {KernelKind::gemm, "gemm"},
    {KernelKind::attention_prefill, "attention_prefill"},
    {KernelKind::attention_decode, "attention_decode"},
    {KernelKind::norm, "norm"},
    {KernelKind::elementwise, "elementwise"},
    {KernelKind::noncontiguous_elementwise, "noncontiguous_elementwise"},
}};
constexpr int kMaxBaseDepth = 4;

const nlohmann::json& require_object(const nlohmann::json& json, const char* key,
                                     const std::string& context) {
  if (!json.contains(key) || !json[key].is_object()) {
    throw InputError(context + ": missing object '" + key + "'");
  }
  return json[key];
}

// A positive number no larger than `max_value`: a template with a zero or absurd size would
// otherwise price everything at zero or infinity.
double positive(const nlohmann::json& json, const char* key, const std::string& context,
                double max_value) {
  double v = require_number(json, key, context);
  if (!(v > 0.0) || v > max_value) {
    throw InputError(
        fmt::format("{}: '{}' must be in (0, {:g}], got {:g}", context, key, max_value, v));
  }
  return v;
}

double fraction(const nlohmann::json& json, const char* key, const std::string& context) {
  double v = require_number(json, key, context);
  if (!(v > 0.0 && v <= 1.5)) {
    throw InputError(fmt::format("{}: '{}' must be in (0, 1.5], got {:g}", context, key, v));
  }
  return v;
}

nlohmann::json load_merged(const std::string& name_or_path, int depth) {
  auto path = resolve_data_file(name_or_path, "templates", "hardware template");
  nlohmann::json doc = read_json_file(path, "hardware template");
  if (!doc.is_object())
    throw InputError("hardware template '" + path.string() + "' is not an object");
  if (!doc.contains("base")) return doc;
  if (depth >= kMaxBaseDepth) {
    throw InputError("hardware template '" + path.string() + "': base chain deeper than " +
                     std::to_string(kMaxBaseDepth));
  }
  nlohmann::json merged = load_merged(require_string(doc, "base", path.string()), depth + 1);
  nlohmann::json sources = merged.value("sources", nlohmann::json::object());
  if (doc.contains("sources")) {
    if (!doc["sources"].is_object() || !sources.is_object())
      throw InputError("hardware template '" + path.string() + "': 'sources' must be an object");
    sources.update(doc["sources"]);
  }
  merged.merge_patch(doc);
  merged["sources"] = sources;
  return merged;
}
}  // namespace

std::string_view memory_type_name(MemoryType type) {
  return enum_name(kMemoryNames, type);
}

MemoryType parse_memory_type(std::string_view name) {
  // Case does not matter ("hbm3" is HBM3); the table's spelling is the canonical one.
  auto lower = [](std::string_view text) {
    std::string out(text);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  for (const auto& [type, known] : kMemoryNames) {
    if (lower(known) == lower(name)) return type;
  }
  return parse_enum(kMemoryNames, name, "memory type");  // throws, listing the known ones
}

std::string_view topology_name(Topology topology) {
  return enum_name(kTopologyNames, topology);
}

std::string_view kernel_kind_name(KernelKind kind) {
  return enum_name(kKernelKindNames, kind);
}

Topology parse_topology(std::string_view name) {
  return parse_enum(kTopologyNames, name, "topology");
}

HardwareTemplate parse_hardware_template(const nlohmann::json& doc, const std::string& context) {
  HardwareTemplate t;
  t.document = doc;
  t.name = require_string(doc, "name", context);
  t.display_name = require_string(doc, "display_name", context);
  t.base = optional_string(doc, "base", "", context);
  t.process_node = require_string(doc, "process_node", context);
  t.clock_hz = positive(doc, "clock_hz", context, 1e10);
  t.core_count = static_cast<int>(require_count(doc, "core_count", context, 1, 100000));
  t.physical_core_count = static_cast<int>(
      optional_count(doc, "physical_core_count", t.core_count, context, 1, 1000000));
  if (t.physical_core_count < t.core_count) {
    throw InputError(context + ": physical_core_count is below core_count");
  }

  const std::string core_ctx = context + " core";
  const auto& core = require_object(doc, "core", context);
  auto& tu = t.core.tensor;
  tu.per_core = static_cast<int>(require_count(core, "tensor_units_per_core", core_ctx, 0, 1024));
  tu.rows = static_cast<int>(require_count(core, "tensor_rows", core_ctx, 1, 4096));
  tu.cols = static_cast<int>(require_count(core, "tensor_cols", core_ctx, 1, 4096));
  const auto& rates = require_object(core, "tensor_dtype_rate", core_ctx);
  for (auto it = rates.begin(); it != rates.end(); ++it) {
    DType d = parse_dtype(it.key());
    double r = require_number(rates, it.key(), core_ctx + " tensor_dtype_rate");
    if (r < 0.0 || r > 16.0) throw InputError(core_ctx + ": tensor_dtype_rate out of [0, 16]");
    tu.dtype_rate[static_cast<int>(d)] = r;
  }
  t.core.vector_lanes = static_cast<int>(require_count(core, "vector_lanes", core_ctx, 1, 65536));
  t.core.int32_lanes = static_cast<int>(optional_count(core, "int32_lanes", 0, core_ctx, 0, 65536));
  t.core.fp64_lanes = static_cast<int>(optional_count(core, "fp64_lanes", 0, core_ctx, 0, 65536));
  t.core.fp32_int32_lanes = static_cast<int>(
      optional_count(core, "fp32_int32_lanes", 0, core_ctx, 0, t.core.vector_lanes));
  t.core.rt_cores = static_cast<int>(optional_count(core, "rt_cores", 0, core_ctx, 0, 64));
  t.core.vector_flops_per_lane_cycle = positive(core, "vector_flops_per_lane_cycle", core_ctx, 64);
  t.core.sfu_ops_per_cycle = positive(core, "sfu_ops_per_cycle", core_ctx, 65536);
  t.core.register_file_bytes = positive(core, "register_file_bytes", core_ctx, 1e9);
  t.core.local_buffer_bytes = positive(core, "local_buffer_bytes", core_ctx, 1e10);
  t.core.local_buffer_bytes_per_cycle =
      positive(core, "local_buffer_bytes_per_cycle", core_ctx, 1e6);

  const auto& gb = require_object(doc, "global_buffer", context);
  t.global_buffer_bytes = positive(gb, "bytes", context + " global_buffer", 1e12);
  t.global_buffer_bandwidth_bps = positive(gb, "bandwidth_bps", context + " global_buffer", 1e15);
  t.global_buffer_physical_bytes =
      optional_number(gb, "physical_bytes", t.global_buffer_bytes, context + " global_buffer");
  if (t.global_buffer_physical_bytes < t.global_buffer_bytes) {
    throw InputError(context + ": global_buffer physical_bytes is below bytes");
  }
  if (doc.contains("host_bus")) {
    const auto& host = require_object(doc, "host_bus", context);
    t.host_bus = require_string(host, "kind", context + " host_bus");
    t.host_bus_lanes =
        static_cast<int>(require_count(host, "lanes", context + " host_bus", 1, 256));
  }

  const auto& mem = require_object(doc, "memory", context);
  t.memory.type = parse_memory_type(require_string(mem, "type", context + " memory"));
  t.memory.capacity_bytes = positive(mem, "capacity_bytes", context + " memory", 1e15);
  t.memory.bandwidth_bps = positive(mem, "bandwidth_bps", context + " memory", 1e15);
  t.memory.channels =
      static_cast<int>(require_count(mem, "channels", context + " memory", 1, 4096));
  t.memory.phys_on_die = static_cast<int>(
      optional_count(mem, "phys_on_die", t.memory.channels, context + " memory", 1, 65536));
  t.memory.latency_s = optional_number(mem, "latency_s", 500e-9, context + " memory");
  if (!(t.memory.latency_s > 0.0 && t.memory.latency_s < 1e-3)) {
    throw InputError(context + ": memory latency_s must be in (0, 1 ms)");
  }
  if (t.memory.phys_on_die < t.memory.channels) {
    throw InputError(context + ": memory phys_on_die is below channels");
  }

  const auto& node = require_object(doc, "node", context);
  const std::string node_ctx = context + " node";
  t.node.devices = static_cast<int>(require_count(node, "devices", node_ctx, 1, 4096));
  t.node.link_bandwidth_bps = positive(node, "link_bandwidth_bps", node_ctx, 1e14);
  t.node.links_per_device =
      static_cast<int>(require_count(node, "links_per_device", node_ctx, 1, 1024));
  t.node.link_latency_s = positive(node, "link_latency_s", node_ctx, 1.0);
  t.node.topology = parse_topology(require_string(node, "topology", node_ctx));
  t.node.link_kind = require_string(node, "link_kind", node_ctx);

  const auto& eff = require_object(doc, "efficiency", context);
  const std::string eff_ctx = context + " efficiency";
  t.efficiency.tensor = fraction(eff, "tensor", eff_ctx);
  t.efficiency.memory = fraction(eff, "memory", eff_ctx);
  t.efficiency.global_buffer = fraction(eff, "global_buffer", eff_ctx);
  t.efficiency.memory_ramp_s = optional_number(eff, "memory_ramp_s", 0.0, eff_ctx);
  if (!(t.efficiency.memory_ramp_s >= 0.0 && t.efficiency.memory_ramp_s < 1e-3)) {
    throw InputError(eff_ctx + ": memory_ramp_s must be in [0, 1 ms)");
  }
  if (eff.contains("noncontiguous_memory")) {
    t.efficiency.noncontiguous_memory = fraction(eff, "noncontiguous_memory", eff_ctx);
  }
  t.efficiency.kernel_in_stream_s = positive(eff, "kernel_in_stream_s", eff_ctx, 1e-3);
  t.efficiency.kernel_isolated_s = positive(eff, "kernel_isolated_s", eff_ctx, 1e-3);
  t.efficiency.sustained_compute_slowdown =
      optional_number(eff, "sustained_compute_slowdown", 1.0, eff_ctx);
  if (!(t.efficiency.sustained_compute_slowdown >= 1.0 &&
        t.efficiency.sustained_compute_slowdown <= 3.0)) {
    throw InputError(eff_ctx + ": sustained_compute_slowdown must be in [1, 3]");
  }

  if (eff.contains("kernel_floor_s")) {
    const auto& floors = require_object(eff, "kernel_floor_s", eff_ctx);
    const std::string floors_ctx = eff_ctx + " kernel_floor_s";
    for (const auto& [key, value] : floors.items()) {
      KernelKind kernel = KernelKind::gemm;
      try {
        kernel = parse_enum(kKernelKindNames, key, "kernel kind");
      } catch (const InputError& e) {
        throw InputError(floors_ctx + ": " + e.what());
      }
      const auto kind = static_cast<int>(kernel);
      t.efficiency.kernel_floor_s[kind] = positive(floors, key.c_str(), floors_ctx, 1e-3);
    }
  }

  t.published_die_area_mm2 = optional_number(doc, "published_die_area_mm2", 0.0, context);
  if (t.published_die_area_mm2 < 0.0)
    throw InputError(context + ": negative published_die_area_mm2");
  if (doc.contains("sources") && !doc["sources"].is_object())
    throw InputError(context + ": 'sources' must be an object");
  t.sources = doc.value("sources", nlohmann::json::object());
  return t;
}

HardwareTemplate load_hardware_template(const std::string& name_or_path) {
  nlohmann::json doc = load_merged(name_or_path, 0);
  return parse_hardware_template(doc, "hardware template '" + name_or_path + "'");
}

HardwareTemplate vary_template(const HardwareTemplate& base, const std::string& key, double value,
                               const std::string& text_value) {
  nlohmann::json doc = base.document;
  const std::string what = key + "=" + text_value;
  auto need_positive = [&] {
    if (!(value > 0.0) || !std::isfinite(value)) {
      throw FieldError("`template_change` " + what + ": needs a positive number");
    }
  };
  if (key == "memory") {
    // A different memory technology at the same channel count: its bandwidth and a capacity
    // typical of that technology per channel (hw/memory_technology.cpp has the sources).
    MemoryType type = parse_memory_type(text_value);
    const MemoryTechnology& tech = memory_technology(type);
    doc["memory"]["type"] = std::string(memory_type_name(type));
    doc["memory"]["channels"] = tech.default_channels;
    doc["memory"]["phys_on_die"] = tech.default_channels;
    doc["memory"]["bandwidth_bps"] = tech.bandwidth_per_channel_bps * tech.default_channels;
    doc["memory"]["capacity_bytes"] = tech.capacity_per_channel_bytes * tech.default_channels;
  } else {
    need_positive();
    if (key == "cores") {
      // Spares scale with the cores: the same share of the die is kept for yield.
      const double spare = static_cast<double>(base.physical_core_count) / base.core_count;
      doc["core_count"] = static_cast<int64_t>(std::llround(value));
      doc["physical_core_count"] = static_cast<int64_t>(std::llround(value * spare));
    } else if (key == "clock_ghz") {
      doc["clock_hz"] = value * 1e9;
    } else if (key == "l2_mb") {
      // Disabled slices scale with the enabled ones.
      const double spare = base.global_buffer_physical_bytes / base.global_buffer_bytes;
      doc["global_buffer"]["bytes"] = value * 1024.0 * 1024.0;
      doc["global_buffer"]["physical_bytes"] = value * 1024.0 * 1024.0 * spare;
    } else if (key == "memory_gb") {
      doc["memory"]["capacity_bytes"] = value * 1e9;
    } else if (key == "memory_tbps") {
      doc["memory"]["bandwidth_bps"] = value * 1e12;
    } else if (key == "tensor_rows") {
      doc["core"]["tensor_rows"] = static_cast<int64_t>(std::llround(value));
    } else if (key == "tensor_cols") {
      doc["core"]["tensor_cols"] = static_cast<int64_t>(std::llround(value));
    } else if (key == "local_kb") {
      doc["core"]["local_buffer_bytes"] = value * 1024.0;
    } else {
      throw FieldError("`template_change`: unknown key '" + key +
                       "'; known: cores, clock_ghz, l2_mb, memory, memory_gb, memory_tbps, "
                       "tensor_rows, tensor_cols, local_kb");
    }
  }
  doc["name"] = base.name + "[" + what + "]";
  doc.erase("published_die_area_mm2");  // a changed design is no longer the published die
  return parse_hardware_template(doc, "template " + base.name + " with " + what);
}

HardwareSpec spec_of_template(const HardwareTemplate& t) {
  HardwareSpec s;
  s.name = t.name;
  s.display_name = t.display_name;
  s.vendor = "template";
  s.architecture = "template";
  s.sm_count = t.core_count;
  s.boost_clock_hz = t.clock_hz;
  s.l2_bytes = t.global_buffer_bytes;
  s.memory_bytes = t.memory.capacity_bytes;
  s.memory_bandwidth_bps = t.memory.bandwidth_bps;
  s.datasheet_memory_bandwidth_bps = t.memory.bandwidth_bps;
  s.memory_type = std::string(memory_type_name(t.memory.type));
  for (int i = 0; i < kDTypeCount; ++i) {
    const auto dtype = static_cast<DType>(i);
    if (t.core.tensor.dtype_rate[i] > 0.0) s.peak_flops_per_s[i] = t.matrix_peak_flops(dtype);
  }
  if (!s.peak_flops_per_s[static_cast<int>(DType::fp32)]) {
    s.peak_flops_per_s[static_cast<int>(DType::fp32)] = t.vector_peak_flops();
  }
  s.datasheet_peak_flops_per_s = s.peak_flops_per_s;
  s.interconnect.kind = t.node.link_kind;
  s.interconnect.bandwidth_bps = t.node.link_bandwidth_bps * t.node.links_per_device;
  s.interconnect.latency_s = t.node.link_latency_s;
  s.sources.push_back({"all", "hardware template " + t.name});
  return s;
}

std::vector<std::string> known_templates() {
  return data_names("templates");
}

}  // namespace inferlab
