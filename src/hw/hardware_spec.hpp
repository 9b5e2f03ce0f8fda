#pragma once
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "util/dtype.hpp"

namespace inferlab {

// The scale-up link between devices of one node (NVLink, Infinity Fabric, or PCIe).
struct InterconnectSpec {
  std::string kind;            // "nvlink4", "pcie4", ...
  double bandwidth_bps = 0.0;  // per device, per direction
  double latency_s = 0.0;      // one hop, small message
};

// One GPU from its spec sheet. Every number in the JSON carries a "source"; they are kept
// so that `inferlab hardware --format json` can show where each figure came from.
struct HardwareSpec {
  std::string name;          // "h100-sxm"
  std::string display_name;  // "NVIDIA H100 SXM5 80GB"
  std::string vendor;
  std::string architecture;
  int sm_count = 0;  // SMs (NVIDIA) or CUs (AMD)
  double boost_clock_hz = 0.0;
  double l2_bytes = 0.0;
  double memory_bytes = 0.0;
  double memory_bandwidth_bps = 0.0;
  std::string memory_type;
  // Dense (no sparsity) peak FLOP/s per dtype on the matrix units; fp32 is the SIMT rate.
  std::array<std::optional<double>, kDTypeCount> peak_flops_per_s{};
  InterconnectSpec interconnect;
  std::vector<std::pair<std::string, std::string>> sources;  // field -> source

  std::optional<double> peak_flops(DType dtype) const {
    return peak_flops_per_s[static_cast<int>(dtype)];
  }
  bool supports(DType dtype) const { return peak_flops(dtype).has_value(); }
  std::vector<std::string> supported_dtype_names() const;
};

// Loads a shipped sheet by name (data/hardware/<name>.json) or a path to a sheet.
HardwareSpec load_hardware(const std::string& name_or_path);
std::vector<std::string> known_hardware();

}  // namespace inferlab
