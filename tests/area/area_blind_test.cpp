// A blind check of the area model: dies that played no part in fitting it. The model's one
// fitted constant (control and data-movement transistors per arithmetic lane) was set on the
// A100 and H100 (tests/area/area_test.cpp, AreaModel.FittedDiesConsistency); these three dies
// were described afterwards from their vendors' published figures and run through the model
// unchanged, by the CLI (`inferlab area --hardware <template file> --format json`), as a user
// would. They were +88%, +38%, -33%; issue 39 set N16's logic density from its library's track
// height (GV100 +54.8%, GP100 +14.6%); a second pass took the L2's density and LLMCompass's
// budgets' density basis from the GA100 die shot and listed AD102's RT cores and FP32/INT32
// lanes (docs/MEASUREMENTS.md section 41): GV100 +37.8%, GP100 -0.3%, AD102 -13.8%. The fitted
// control per lane still does not carry to GV100: it would need 0.40 M per lane, where the A100
// alone would need 0.85 M, the H100 1.09 M (fitted together, 0.964 M) and GP100 0.97 M. The
// bounds guard today's error as a ratchet (docs/MEASUREMENTS.md section 12): |error| at most
// today's x 1.10, rounded up to the next half point, and within issue 39's +-15% where the die
// meets it; tighten them when the model improves.
//
// Sources (die area, transistors, per-SM resources):
// - GV100: NVIDIA Tesla V100 GPU Architecture whitepaper (2017): 815 mm^2, 21.1 B transistors,
//   TSMC 12 nm FFN; full die 84 SMs (V100: 80), per SM 64 FP32, 64 INT32, 32 FP64 lanes,
//   8 tensor cores of 64 FMA/clk (4x4x4), 4 x 4 SFUs, 256 KB registers, 128 KB L1/shared;
//   6 MB L2, 4 HBM2 stacks (8 x 512-bit controllers), 6 NVLink2 links, PCIe 3.0 x16.
//   The model has no 12FFN node: 12FFN is a 16 nm-class process, described here as N16.
// - GP100: NVIDIA Tesla P100 whitepaper (2016): 610 mm^2, 15.3 B transistors, TSMC 16FF+;
//   full die 60 SMs (P100: 56), per SM 64 FP32 and 32 FP64 lanes (integer work on the FP32
//   lanes), no tensor cores, 16 SFUs, 256 KB registers, 64 KB shared memory; 4 MB L2, 4 HBM2
//   stacks, 4 NVLink (first generation: described with the model's nvlink2 PHY estimate),
//   PCIe 3.0 x16.
// - AD102: NVIDIA Ada GPU Architecture whitepaper (2022): 608.5 mm^2, 76.3 B transistors,
//   TSMC 4N; full die 144 SMs (RTX 4090: 128), per SM 128 FP32 lanes (half of them also run
//   INT32: no separate integer lanes), 2 FP64, 4 tensor cores (RTX 4090 330 dense fp16
//   TFLOP/s at 2.52 GHz = 128 SMs x 4 x 128 FMA/clk x 2), 16 SFUs, 256 KB registers, 128 KB
//   L1/shared; 96 MB L2, 12 x 32-bit GDDR6X controllers (GDDR6 in the model), PCIe 4.0 x16,
//   no NVLink (the template needs one link: one NVLink4 PHY, 1.5 mm^2, is counted too many).
//   Graphics parts: one RT core per SM (rt_cores) and, of the 128 fp32 lanes, 64 "FP32/INT32"
//   lanes (fp32_int32_lanes: their integer datapath counts, not a second dispatch). Its raster
//   engines, ROPs, video engines and display have no public per-block figure and are not in the
//   model, so it is expected to come out small.
// GA102 (Samsung 8N, 628.4 mm^2) is left out: the model has no Samsung node.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.hpp"

namespace inferlab {
namespace {

// Fields the area model does not read (efficiencies, node size, clocks' use in timing) are
// still required by the template format; they carry the H100 template's values.
nlohmann::json common_fields() {
  return nlohmann::json::parse(R"({
    "efficiency": {"tensor": 0.8256, "memory": 0.9367, "global_buffer": 1.0,
                   "kernel_in_stream_s": 1.537e-06, "kernel_isolated_s": 3.261e-06}
  })");
}

nlohmann::json gv100() {
  nlohmann::json t = nlohmann::json::parse(R"({
    "name": "gv100-blind", "display_name": "NVIDIA GV100 (V100 SXM2 32GB), blind area check",
    "process_node": "N16", "clock_hz": 1530000000.0, "core_count": 80, "physical_core_count": 84,
    "core": {"tensor_units_per_core": 8, "tensor_rows": 4, "tensor_cols": 16,
             "tensor_dtype_rate": {"fp16": 1}, "vector_lanes": 64,
             "vector_flops_per_lane_cycle": 2, "sfu_ops_per_cycle": 16,
             "register_file_bytes": 262144, "local_buffer_bytes": 131072,
             "local_buffer_bytes_per_cycle": 128, "int32_lanes": 64, "fp64_lanes": 32},
    "global_buffer": {"bytes": 6291456, "bandwidth_bps": 3133440000000.0},
    "memory": {"type": "HBM2", "capacity_bytes": 34359738368.0, "bandwidth_bps": 900000000000.0,
               "channels": 4, "phys_on_die": 4},
    "node": {"devices": 8, "link_bandwidth_bps": 25000000000.0, "links_per_device": 6,
             "link_latency_s": 1e-06, "topology": "fully_connected", "link_kind": "nvlink2"},
    "host_bus": {"kind": "pcie3", "lanes": 16},
    "published_die_area_mm2": 815
  })");
  t.update(common_fields());
  return t;
}

nlohmann::json gp100() {
  nlohmann::json t = nlohmann::json::parse(R"({
    "name": "gp100-blind", "display_name": "NVIDIA GP100 (P100 SXM2 16GB), blind area check",
    "process_node": "N16", "clock_hz": 1480000000.0, "core_count": 56, "physical_core_count": 60,
    "core": {"tensor_units_per_core": 0, "tensor_rows": 1, "tensor_cols": 1,
             "tensor_dtype_rate": {}, "vector_lanes": 64,
             "vector_flops_per_lane_cycle": 2, "sfu_ops_per_cycle": 16,
             "register_file_bytes": 262144, "local_buffer_bytes": 65536,
             "local_buffer_bytes_per_cycle": 128, "int32_lanes": 0, "fp64_lanes": 32},
    "global_buffer": {"bytes": 4194304, "bandwidth_bps": 2000000000000.0},
    "memory": {"type": "HBM2", "capacity_bytes": 17179869184.0, "bandwidth_bps": 732000000000.0,
               "channels": 4, "phys_on_die": 4},
    "node": {"devices": 8, "link_bandwidth_bps": 20000000000.0, "links_per_device": 4,
             "link_latency_s": 1e-06, "topology": "fully_connected", "link_kind": "nvlink2"},
    "host_bus": {"kind": "pcie3", "lanes": 16},
    "published_die_area_mm2": 610
  })");
  t.update(common_fields());
  return t;
}

nlohmann::json ad102() {
  nlohmann::json t = nlohmann::json::parse(R"({
    "name": "ad102-blind", "display_name": "NVIDIA AD102 (RTX 4090), blind area check",
    "process_node": "N4", "clock_hz": 2520000000.0, "core_count": 128, "physical_core_count": 144,
    "core": {"tensor_units_per_core": 4, "tensor_rows": 8, "tensor_cols": 16,
             "tensor_dtype_rate": {"fp16": 1, "bf16": 1}, "vector_lanes": 128,
             "vector_flops_per_lane_cycle": 2, "sfu_ops_per_cycle": 16,
             "register_file_bytes": 262144, "local_buffer_bytes": 131072,
             "local_buffer_bytes_per_cycle": 128, "int32_lanes": 0, "fp64_lanes": 2,
             "fp32_int32_lanes": 64, "rt_cores": 1},
    "global_buffer": {"bytes": 75497472, "bandwidth_bps": 5000000000000.0,
                      "physical_bytes": 100663296},
    "memory": {"type": "GDDR6", "capacity_bytes": 25769803776.0,
               "bandwidth_bps": 1008000000000.0, "channels": 12, "phys_on_die": 12},
    "node": {"devices": 1, "link_bandwidth_bps": 25000000000.0, "links_per_device": 1,
             "link_latency_s": 1e-06, "topology": "switch", "link_kind": "nvlink4"},
    "host_bus": {"kind": "pcie4", "lanes": 16},
    "published_die_area_mm2": 608.5
  })");
  t.update(common_fields());
  return t;
}

// The model's die area for a template document, through the CLI.
double modelled_die_mm2(const nlohmann::json& tmpl) {
  // One file per test and die: CTest runs this file's tests as parallel processes.
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  const auto path =
      std::filesystem::temp_directory_path() /
      ("inferlab_area_blind_" + test + "_" + tmpl["name"].get<std::string>() + ".json");
  std::ofstream(path) << tmpl.dump(2);
  const auto r =
      inferlab::testing::run_inferlab("area --hardware '" + path.string() + "' --format json");
  std::filesystem::remove(path);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return 0.0;
  return nlohmann::json::parse(r.out)["die_area_mm2"].get<double>();
}

struct BlindDie {
  nlohmann::json tmpl;
  double published_mm2;
  // The bound on |model / published - 1|: today's error x 1.10, rounded up to the next half point
  // (the ratchet rule of tests/CMakeLists.txt), and at most issue 39's 15% where today's error
  // meets it. Tighten it when the model improves.
  double max_abs_error;
};

TEST(AreaModel, BlindDiesNotUsedForFitting) {
  const BlindDie dies[] = {
      // GV100: 1123.2 mm^2 against 815 (+37.8%; +88.4% at first, +54.8% after issue 39); 24.7 B
      // transistors against 21.1 B. Outside issue 39's 15%: the fitted control (13,440 lanes x
      // 0.964 M = 527 mm^2) is a budget set on A100/H100 SMs; the Volta SM, with the A100's lane
      // counts, spent well under half of it (docs/MEASUREMENTS.md section 41).
      {gv100(), 815.0, 0.42},
      // GP100: 608.0 mm^2 against 610 (-0.3%; +38.2% at first, +14.6% after issue 39).
      {gp100(), 610.0, 0.005},
      // AD102: 524.3 mm^2 against 608.5 (-13.8%; -33.3% before section 41); 39.6 B transistors
      // against 76.3 B: its raster engines, ROPs, video and display are not in the model.
      {ad102(), 608.5, 0.15},
  };
  for (const auto& die : dies) {
    const double mm2 = modelled_die_mm2(die.tmpl);
    const double error = mm2 / die.published_mm2 - 1.0;
    EXPECT_LE(std::abs(error), die.max_abs_error) << die.tmpl["name"].get<std::string>() << ": "
                                                  << mm2 << " mm^2 against " << die.published_mm2;
  }
}

// Issue 39's target, +-15% of the published area, for the blind dies that meet it today (GV100
// does not: +37.8%, guarded above). A separate test so that it states the target, not a ratchet.
TEST(AreaModel, BlindDiesWithinFifteenPercent) {
  const BlindDie dies[] = {{gp100(), 610.0, 0.15}, {ad102(), 608.5, 0.15}};
  for (const auto& die : dies) {
    const double error = modelled_die_mm2(die.tmpl) / die.published_mm2 - 1.0;
    EXPECT_LE(std::abs(error), die.max_abs_error) << die.tmpl["name"].get<std::string>();
  }
}

}  // namespace
}  // namespace inferlab
