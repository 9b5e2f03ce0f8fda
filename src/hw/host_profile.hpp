#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace inferlab {

// What the host (the CPU and its driver stack, which issue a GPU's work) costs, measured: the
// "host" section of a probe profile, or a host file (`inferlab probe --host-only`, with
// validation/host_dispatch.py's PyTorch figure merged in; format in docs/PROFILE.md). Shipped
// per hardware in data/hosts/<hardware>.json. A figure the file lacks is 0.
struct HostProfile {
  std::string path;
  std::string device_name;  // the GPU the host drove ("" when the file does not say)
  std::string measured_at;
  std::string source;  // how and where it was measured
  // Probe: host wall time per cudaLaunchKernel of an empty kernel, back to back on one stream.
  double launch_s = 0.0;
  // Probe: host wall time per cudaGraphLaunch of a one-kernel graph.
  double graph_launch_s = 0.0;
  // Probe: the Python-free CPU workload that stands for per-op dispatch (probe/host_speed.hpp),
  // seconds per op.
  double cpu_dispatch_s = 0.0;
  // validation/host_dispatch.py: host time of one PyTorch eager op issued from Python
  // (x.add_ on a 1-element CUDA tensor, back to back), its kernel launch included.
  double torch_op_s = 0.0;
};

// Parses a host file or a probe profile with a "host" section; `path` names it in errors.
// Missing figures are 0; negative or implausible ones (over 1 ms per launch or op) are
// InputErrors. A document with no "host" section is an InputError.
HostProfile parse_host_profile(const nlohmann::json& document, const std::string& path);
HostProfile load_host_profile(const std::string& path);

// data/hosts/<hardware>.json when shipped, else nothing.
std::optional<HostProfile> shipped_host_profile(const std::string& hardware);

}  // namespace inferlab
