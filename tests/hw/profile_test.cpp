#include "hw/profile.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "hw/hardware_spec.hpp"
#include "util/error.hpp"

namespace inferlab {
namespace {

// The smallest profile the predictor accepts, with hand-picked figures.
nlohmann::json tiny_profile() {
  return {
      {"measured_at", "2026-01-01T00:00:00Z"},
      {"device", {{"name", "Test GPU"}, {"sm_count", 100}}},
      {"compute",
       {{"bf16_tensor", {{"flops_per_s", 500e12}}}, {"fp32_simt", {{"flops_per_s", 50e12}}}}},
      {"memory",
       {{"hbm",
         {{"read_bps", 2e12}, {"write_bps", 2.1e12}, {"copy_bps", 1.9e12}, {"latency_ns", 400}}},
        {"l2", {{"read_bps", 10e12}, {"latency_ns", 150}}},
        {"shared", {{"read_bps", 20e12}}}}},
      {"graph_kernel_gap_us", 0.8},
      {"graph_small_kernel_us", 1.5},
      {"launch_overhead_us", 3.0},
      {"sweeps", {{"gemm", nlohmann::json::array()}}}};
}

class ProfileFiles : public ::testing::Test {
 protected:
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("inferlab_profile_" + std::to_string(::getpid()));
  void SetUp() override { std::filesystem::create_directories(dir); }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

TEST_F(ProfileFiles, ReadsTheFiguresThePredictorUses) {
  MeasuredProfile p = load_profile(write("p.json", tiny_profile().dump()));
  EXPECT_EQ(p.device_name, "Test GPU");
  EXPECT_DOUBLE_EQ(*p.peak_flops_per_s[static_cast<int>(DType::bf16)], 500e12);
  EXPECT_FALSE(p.peak_flops_per_s[static_cast<int>(DType::fp8)].has_value());
  EXPECT_DOUBLE_EQ(p.hbm_read_bps, 2e12);
  EXPECT_DOUBLE_EQ(p.hbm_latency_s, 400e-9);
  EXPECT_DOUBLE_EQ(p.graph_small_kernel_s, 1.5e-6);
}

TEST_F(ProfileFiles, OverlayReplacesCeilingsAndKeepsTheDatasheet) {
  HardwareSpec h = load_hardware("h100-sxm", write("p.json", tiny_profile().dump()));
  ASSERT_TRUE(h.profile.has_value());
  EXPECT_DOUBLE_EQ(*h.peak_flops(DType::bf16), 500e12);
  EXPECT_DOUBLE_EQ(*h.peak_flops(DType::fp8), 1978.9e12);  // not measured: datasheet stays
  EXPECT_DOUBLE_EQ(h.memory_bandwidth_bps, 2e12);
  EXPECT_DOUBLE_EQ(h.datasheet_memory_bandwidth_bps, 3.35e12);
  EXPECT_EQ(h.sm_count, 100);
  EXPECT_NE(h.ceiling_source().find("measured profile"), std::string::npos);
}

TEST_F(ProfileFiles, BrokenProfilesAreInputErrors) {
  auto p = tiny_profile();
  p["memory"]["hbm"].erase("read_bps");
  EXPECT_THROW(load_profile(write("a.json", p.dump())), InputError);
  p = tiny_profile();
  p["compute"].erase("bf16_tensor");
  EXPECT_THROW(load_profile(write("b.json", p.dump())), InputError);
  p = tiny_profile();
  p["memory"]["hbm"]["read_bps"] = -1;
  EXPECT_THROW(load_profile(write("c.json", p.dump())), InputError);
  EXPECT_THROW(load_profile(write("d.json", "{\"device\": ")), InputError);
  EXPECT_THROW(load_profile((dir / "missing.json").string()), InputError);
}

TEST(ShippedProfiles, H100AndH200AreUsedByDefault) {
  for (const char* name : {"h100-sxm", "h200"}) {
    HardwareSpec h = load_hardware(name);
    ASSERT_TRUE(h.profile.has_value()) << name;
    // Measured ceilings sit below the datasheet's and above half of it.
    double measured = *h.peak_flops(DType::bf16), sheet = *h.datasheet_peak_flops_per_s[3];
    EXPECT_LT(measured, sheet);
    EXPECT_GT(measured, 0.5 * sheet);
    EXPECT_LT(h.memory_bandwidth_bps, h.datasheet_memory_bandwidth_bps);
    EXPECT_GT(h.profile->graph_small_kernel_s, 0.0);
  }
  EXPECT_FALSE(load_hardware("h100-sxm", kProfileNone).profile.has_value());
  EXPECT_FALSE(load_hardware("a100-80g").profile.has_value());  // none shipped
}

// What the probe measured on the H100 (data/profiles/h100-sxm.json) keeps the hierarchy.
TEST(ShippedProfiles, H100HierarchyAndStaircase) {
  MeasuredProfile p = load_hardware("h100-sxm").profile.value();
  const auto& mem = p.document["memory"];
  EXPECT_GT(mem["shared"]["read_bps"].get<double>(), mem["l2"]["read_bps"].get<double>());
  EXPECT_GT(mem["l2"]["read_bps"].get<double>(), mem["hbm"]["read_bps"].get<double>());
  const auto& latency = mem["working_set_sweep"]["latency"];
  double first = latency.front()["latency_ns"].get<double>();
  double last = latency.back()["latency_ns"].get<double>();
  EXPECT_GT(last, 5 * first);  // L1 hit vs HBM
  EXPECT_GE(p.document["sweeps"]["gemm"].size() + p.document["sweeps"]["llm_kernels"].size(), 200u);
}

}  // namespace
}  // namespace inferlab
