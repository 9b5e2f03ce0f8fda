#include "hw/host_profile.hpp"

#include <filesystem>

#include "util/data_dir.hpp"
#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab {

namespace {
// A figure in microseconds (or nanoseconds) as seconds: 0 when absent or null.
double seconds(const nlohmann::json& host, const char* key, double unit_s, const std::string& ctx) {
  const double v = optional_number(host, key, 0.0, ctx) * unit_s;
  if (v < 0.0 || v > 1e-3) {
    throw InputError(ctx + ": '" + key + "' must be between 0 and 1 ms");
  }
  return v;
}
}  // namespace

HostProfile parse_host_profile(const nlohmann::json& document, const std::string& path) {
  const std::string ctx = "host profile '" + path + "'";
  if (!document.is_object() || !document.contains("host") || !document.at("host").is_object()) {
    throw InputError(ctx + ": missing object 'host' (inferlab probe --host-only writes one)");
  }
  const auto& host = document.at("host");
  HostProfile h;
  h.path = path;
  h.measured_at = optional_string(document, "measured_at", "", ctx);
  h.source = optional_string(document, "source", "", ctx);
  if (document.contains("device") && document.at("device").is_object()) {
    h.device_name = optional_string(document.at("device"), "name", "", ctx + " device");
  }
  h.launch_s = seconds(host, "launch_us", 1e-6, ctx + " host");
  h.graph_launch_s = seconds(host, "graph_launch_us", 1e-6, ctx + " host");
  h.cpu_dispatch_s = seconds(host, "cpu_dispatch_ns", 1e-9, ctx + " host");
  h.torch_op_s = seconds(host, "torch_op_us", 1e-6, ctx + " host");
  if (h.torch_op_s > 0.0 && h.launch_s > 0.0 && h.torch_op_s <= h.launch_s) {
    throw InputError(ctx + ": 'torch_op_us' (an op with its launch) must exceed 'launch_us'");
  }
  return h;
}

HostProfile load_host_profile(const std::string& path) {
  return parse_host_profile(read_json_file(path, "host profile"), path);
}

std::optional<HostProfile> shipped_host_profile(const std::string& hardware) {
  const auto file = data_dir() / "hosts" / (hardware + ".json");
  if (hardware.empty() || !std::filesystem::exists(file)) return std::nullopt;
  HostProfile host = load_host_profile(file.string());
  host.path = "data/hosts/" + hardware + ".json";  // shipped: the same name in any checkout
  return host;
}

}  // namespace inferlab
