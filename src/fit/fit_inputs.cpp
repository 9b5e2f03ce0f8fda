#include "fit/fit_inputs.hpp"

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/json_file.hpp"

namespace inferlab {

std::vector<MeasuredOp> fit_split(const std::vector<MeasuredOp>& measured) {
  std::vector<MeasuredOp> fitted;
  for (const auto& m : measured) {
    if (!m.held_out) fitted.push_back(m);
  }
  return fitted;
}

FitInputs gather_fit_inputs(const HardwareSpec& hw, const nlohmann::json* reference,
                            const std::string& reference_path) {
  FitInputs in;
  in.start = load_spec_delay_factors();
  if (reference) {
    auto ops =
        measured_ops_from_reference(*reference, "measured reference '" + reference_path + "'");
    in.isolated_floor_s = fastest_measured_s(fit_split(ops));
    in.measured.insert(in.measured.end(), ops.begin(), ops.end());
    const auto& doc = *reference;
    std::string device = doc.contains("device") && doc["device"].contains("name")
                             ? doc["device"]["name"].get<std::string>()
                             : "unknown device";
    in.sources.push_back(fmt::format("{} PyTorch operators from {} ({}, {})", ops.size(),
                                     reference_path, device,
                                     doc.value("measured_at", std::string("?"))));
    if (doc.contains("launch")) {
      in.start.kernel_latency_s =
          require_number(doc["launch"], "graph_per_kernel_s", "measured reference launch");
    }
  }
  if (hw.profile) {
    auto ops = measured_ops_from_profile(hw.profile->document,
                                         "hardware profile '" + hw.profile->path + "'");
    in.measured.insert(in.measured.end(), ops.begin(), ops.end());
    in.sources.push_back(fmt::format("{} probe sweep points from {} ({})", ops.size(),
                                     hw.profile->path, hw.profile->measured_at));
    // The fixed cost per kernel: a small real kernel's time inside a graph where the profile
    // measured it, else the empty-kernel gap (a lower bound).
    in.start.kernel_latency_s = hw.profile->graph_small_kernel_s > 0.0
                                    ? hw.profile->graph_small_kernel_s
                                    : hw.profile->graph_kernel_gap_s;
  }
  if (in.measured.empty()) {
    throw InputError("nothing to fit: give --data, or a --hardware with a measured profile");
  }
  for (const auto& m : in.measured) in.held_out += m.held_out;
  return in;
}

FitInputs gather_fit_inputs(const HardwareSpec& hw, const std::string& reference_path) {
  if (reference_path.empty()) return gather_fit_inputs(hw, nullptr, reference_path);
  const nlohmann::json reference = read_json_file(reference_path, "measured reference");
  return gather_fit_inputs(hw, &reference, reference_path);
}

}  // namespace inferlab
