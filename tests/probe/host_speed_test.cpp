// The host measurement's CPU-only parts (the dispatch workload, the host section's shape and
// units); they run everywhere, CI included. The GPU part is in gpu_host_test.cpp.
#include "probe/host_speed.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "hw/host_profile.hpp"

namespace inferlab {
namespace {

TEST(HostSpeed, CpuDispatchWorkloadIsTimedPerOpAndDeterministic) {
  const probe::CpuDispatchResult a = probe::measure_cpu_dispatch(5000, 3);
  const probe::CpuDispatchResult b = probe::measure_cpu_dispatch(5000, 3);
  EXPECT_EQ(a.checksum, b.checksum);  // the same work every time
  EXPECT_NE(a.checksum, probe::measure_cpu_dispatch(5001, 1).checksum);
  EXPECT_EQ(a.ops_per_run, 5000);
  EXPECT_EQ(a.runs, 3);
  // Nanoseconds per op: positive and ordered. Its size is a timing (a busy 2-core CI machine
  // moves it by 3x): bench and the probe report it, CTest does not bound it.
  EXPECT_GT(a.ns_per_op_min, 0.0);
  EXPECT_LE(a.ns_per_op_min, a.ns_per_op_median);
  EXPECT_LE(a.ns_per_op_median, a.ns_per_op_max);
  EXPECT_THROW(probe::measure_cpu_dispatch(0, 1), std::invalid_argument);
  EXPECT_THROW(probe::measure_cpu_dispatch(10, 0), std::invalid_argument);
}

TEST(HostSpeed, CpuDispatchJsonNamesItsUnits) {
  probe::CpuDispatchResult r;
  r.ns_per_op_median = 150.0;
  r.ns_per_op_min = 140.0;
  r.ns_per_op_max = 170.0;
  r.ops_per_run = 200000;
  r.runs = 11;
  r.checksum = 42;
  const nlohmann::json j = probe::cpu_dispatch_json(r);
  EXPECT_DOUBLE_EQ(j.at("ns_per_op").get<double>(), 150.0);
  EXPECT_DOUBLE_EQ(j.at("min_ns").get<double>(), 140.0);
  EXPECT_DOUBLE_EQ(j.at("max_ns").get<double>(), 170.0);
  EXPECT_EQ(j.at("ops_per_run").get<int64_t>(), 200000);
  EXPECT_EQ(j.at("runs").get<int>(), 11);
  EXPECT_FALSE(j.at("method").get<std::string>().empty());
}

// The host section takes the probe's launch medians (microseconds) and the CPU figure
// (nanoseconds); PyTorch's figure is left for validation/host_dispatch.py --merge. The host
// profile reader turns them into seconds.
TEST(HostSpeed, HostSectionRoundTripsThroughTheHostProfileReader) {
  const nlohmann::json launch = {{"launch", {{"median_us", 3.5}, {"samples", 11}}},
                                 {"graph_launch", {{"median_us", 1.25}, {"samples", 11}}},
                                 {"kernel_gap", {{"median_us", 3.2}}}};
  const nlohmann::json cpu = {{"ns_per_op", 180.0}};
  const nlohmann::json host = probe::host_section(launch, cpu);
  EXPECT_DOUBLE_EQ(host.at("launch_us").get<double>(), 3.5);
  EXPECT_DOUBLE_EQ(host.at("graph_launch_us").get<double>(), 1.25);
  EXPECT_DOUBLE_EQ(host.at("cpu_dispatch_ns").get<double>(), 180.0);
  EXPECT_TRUE(host.at("torch_op_us").is_null());
  EXPECT_EQ(host.at("launch").at("samples").get<int>(), 11);
  EXPECT_TRUE(host.at("cpu").contains("logical_cpus"));

  const HostProfile parsed =
      parse_host_profile({{"measured_at", "2026-11-29T00:00:00Z"}, {"host", host}}, "t.json");
  EXPECT_DOUBLE_EQ(parsed.launch_s, 3.5e-6);
  EXPECT_DOUBLE_EQ(parsed.graph_launch_s, 1.25e-6);
  EXPECT_DOUBLE_EQ(parsed.cpu_dispatch_s, 180e-9);
  EXPECT_EQ(parsed.torch_op_s, 0.0);
  EXPECT_EQ(parsed.measured_at, "2026-11-29T00:00:00Z");

  // A probe without its launch figures leaves them null, not zero-as-measured.
  const nlohmann::json bare = probe::host_section(nlohmann::json::object(), cpu);
  EXPECT_TRUE(bare.at("launch_us").is_null());
  EXPECT_TRUE(bare.at("graph_launch_us").is_null());
}

}  // namespace
}  // namespace inferlab
