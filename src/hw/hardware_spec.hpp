#pragma once
#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hw/profile.hpp"
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
  // Set when measured ceilings replaced the datasheet's (see apply_profile).
  std::optional<MeasuredProfile> profile;
  std::array<std::optional<double>, kDTypeCount> datasheet_peak_flops_per_s{};
  double datasheet_memory_bandwidth_bps = 0.0;

  // "spec sheet" or "measured profile <path> (<date>)".
  std::string ceiling_source() const;

  std::optional<double> peak_flops(DType dtype) const {
    return peak_flops_per_s[static_cast<int>(dtype)];
  }
  bool supports(DType dtype) const { return peak_flops(dtype).has_value(); }
  std::vector<std::string> supported_dtype_names() const;
};

// Where ceilings come from: "auto" uses data/profiles/<name>.json when one is shipped, "none"
// the spec sheet alone; anything else is a path to a profile.
inline constexpr const char* kProfileAuto = "auto";
inline constexpr const char* kProfileNone = "none";

// Loads a shipped sheet by name (data/hardware/<name>.json) or a path to a sheet, then applies
// the measured profile chosen by `profile`.
HardwareSpec load_hardware(const std::string& name_or_path,
                           const std::string& profile = kProfileAuto);

// The checks and fields of a spec sheet already parsed as JSON; InputError naming `context`.
HardwareSpec parse_hardware_sheet(const nlohmann::json& sheet, const std::string& context);

// Replaces the datasheet ceilings with measured ones: matrix peaks per dtype, HBM bandwidth
// (the read stream, what weight and KV streaming do). Datasheet values stay in datasheet_*.
void apply_profile(HardwareSpec& spec, MeasuredProfile profile);
std::vector<std::string> known_hardware();

}  // namespace inferlab
