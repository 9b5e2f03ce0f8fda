// Host files (data/hosts/*.json, `inferlab probe --host-only`): units, bounds, what is missing.
#include "hw/host_profile.hpp"

#include <gtest/gtest.h>

#include "util/error.hpp"

namespace inferlab {
namespace {

nlohmann::json host_file(nlohmann::json host) {
  return {{"measured_at", "2026-11-29T00:00:00Z"},
          {"source", "test"},
          {"device", {{"name", "NVIDIA H100 80GB HBM3"}}},
          {"host", std::move(host)}};
}

TEST(HostProfile, ReadsMicrosecondsAndNanosecondsAsSeconds) {
  const HostProfile h = parse_host_profile(host_file({{"launch_us", 3.5},
                                                      {"graph_launch_us", 1.5},
                                                      {"cpu_dispatch_ns", 200.0},
                                                      {"torch_op_us", 9.0}}),
                                           "h.json");
  EXPECT_DOUBLE_EQ(h.launch_s, 3.5e-6);
  EXPECT_DOUBLE_EQ(h.graph_launch_s, 1.5e-6);
  EXPECT_DOUBLE_EQ(h.cpu_dispatch_s, 200e-9);
  EXPECT_DOUBLE_EQ(h.torch_op_s, 9e-6);
  EXPECT_EQ(h.device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h.source, "test");
  EXPECT_EQ(h.path, "h.json");
}

TEST(HostProfile, MissingOrNullFiguresAreZero) {
  const HostProfile h =
      parse_host_profile(host_file({{"launch_us", 3.5}, {"torch_op_us", nullptr}}), "h.json");
  EXPECT_DOUBLE_EQ(h.launch_s, 3.5e-6);
  EXPECT_EQ(h.torch_op_s, 0.0);
  EXPECT_EQ(h.cpu_dispatch_s, 0.0);
  EXPECT_EQ(h.graph_launch_s, 0.0);
}

TEST(HostProfile, RefusesWhatCannotBeAHost) {
  EXPECT_THROW(parse_host_profile({{"launch_overhead_us", 3.5}}, "profile.json"), InputError);
  EXPECT_THROW(parse_host_profile(host_file({{"launch_us", -1.0}}), "h.json"), InputError);
  EXPECT_THROW(parse_host_profile(host_file({{"torch_op_us", 5000.0}}), "h.json"), InputError);
  EXPECT_THROW(parse_host_profile(host_file({{"launch_us", "3.5"}}), "h.json"), InputError);
  // An op with its launch cannot cost less than the launch alone.
  EXPECT_THROW(parse_host_profile(host_file({{"launch_us", 4.0}, {"torch_op_us", 3.0}}), "h.json"),
               InputError);
}

TEST(HostProfile, ShippedHostsAreFoundByHardwareName) {
  const auto h100 = shipped_host_profile("h100-sxm");
  ASSERT_TRUE(h100.has_value());
  EXPECT_EQ(h100->path, "data/hosts/h100-sxm.json");
  EXPECT_GT(h100->launch_s, 0.0);
  EXPECT_GT(h100->torch_op_s, h100->launch_s);
  EXPECT_TRUE(shipped_host_profile("h200").has_value());
  EXPECT_FALSE(shipped_host_profile("t4").has_value());
  EXPECT_FALSE(shipped_host_profile("").has_value());
}

}  // namespace
}  // namespace inferlab
