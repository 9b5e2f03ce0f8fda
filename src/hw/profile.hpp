#pragma once
#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "hw/collective_curve.hpp"
#include "util/dtype.hpp"

namespace inferlab {

// The figures of a measured hardware profile (`inferlab probe` output) that predictions use.
// The whole document is kept for the sweeps.
struct MeasuredProfile {
  std::string path;
  std::string device_name;
  std::string measured_at;
  int sm_count = 0;
  // Matrix-unit peaks per dtype (tf32/fp16/bf16/fp8/int8 tensor; fp32 from the SIMT chains).
  std::array<std::optional<double>, kDTypeCount> peak_flops_per_s{};
  double hbm_read_bps = 0.0, hbm_write_bps = 0.0, hbm_copy_bps = 0.0;
  double l2_read_bps = 0.0, shared_read_bps = 0.0;
  double hbm_latency_s = 0.0, l2_latency_s = 0.0;
  double graph_kernel_gap_s = 0.0;    // per empty kernel inside a replayed CUDA graph
  double graph_small_kernel_s = 0.0;  // per small real kernel inside a graph (0: not measured)
  double launch_overhead_s = 0.0;     // host cost of one launch
  CollectiveCurves collectives;       // NCCL curves; empty where the probe saw one GPU
  // The engine's collectives per call within back-to-back calls, eager and in a CUDA graph
  // ("collectives" section; empty where the profile has none).
  InStreamCollectives in_stream_collectives;
  nlohmann::json document;
};

// Reads and validates a profile; missing or impossible figures are InputErrors naming the file.
MeasuredProfile load_profile(const std::string& path);
// The same checks on a document already parsed; `path` names it in errors.
MeasuredProfile parse_profile(nlohmann::json document, const std::string& path);

}  // namespace inferlab
