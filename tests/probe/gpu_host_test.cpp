// `inferlab probe --host-only` on a GPU: the host file's shape and units. Without a GPU (or a
// CUDA build) it skips.
#include <gtest/gtest.h>

#include <sstream>

#include "hw/host_profile.hpp"
#include "probe/probe.hpp"

namespace inferlab {
namespace {

TEST(GpuHostProbe, HostFileHasTheShapeAndUnits) {
  if (visible_gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU on this machine";
  std::ostringstream progress;
  const nlohmann::json file = run_host_probe({true, 0, {}}, progress);
  ASSERT_TRUE(file.contains("host"));
  const nlohmann::json& host = file.at("host");
  for (const char* key : {"launch_us", "graph_launch_us", "cpu_dispatch_ns"}) {
    ASSERT_TRUE(host.at(key).is_number()) << key;
  }
  EXPECT_TRUE(host.at("torch_op_us").is_null());  // host_dispatch.py --merge fills it in
  // Microseconds per launch: a cudaLaunchKernel takes 1-50 us on any host of this decade, a
  // graph launch of one kernel as much; the CPU workload 10 ns to 100 us per op.
  EXPECT_GT(host.at("launch_us").get<double>(), 0.5);
  EXPECT_LT(host.at("launch_us").get<double>(), 50.0);
  EXPECT_GT(host.at("graph_launch_us").get<double>(), 0.3);
  EXPECT_LT(host.at("graph_launch_us").get<double>(), 50.0);
  EXPECT_GT(host.at("cpu_dispatch_ns").get<double>(), 10.0);
  EXPECT_LT(host.at("cpu_dispatch_ns").get<double>(), 1e5);
  EXPECT_FALSE(file.at("device").at("name").get<std::string>().empty());
  EXPECT_NE(progress.str().find("[probe host 1/2]"), std::string::npos);
  const HostProfile parsed = parse_host_profile(file, "probe");
  EXPECT_NEAR(parsed.launch_s, host.at("launch_us").get<double>() * 1e-6, 1e-12);
}

}  // namespace
}  // namespace inferlab
