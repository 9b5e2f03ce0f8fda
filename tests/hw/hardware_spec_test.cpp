#include "hw/hardware_spec.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_support.hpp"
#include "util/error.hpp"

namespace inferlab {
namespace {

TEST(HardwareSpec, AllThirteenSheetsLoadWithSources) {
  const std::vector<std::string> expected = {"a100-40g", "a100-80g", "a10g", "b200",  "h100-pcie",
                                             "h100-sxm", "h200",     "l40s", "mi210", "mi300x",
                                             "rtx4090",  "t4",       "v100"};
  EXPECT_EQ(known_hardware(), expected);
  for (const auto& name : expected) {
    HardwareSpec h = load_hardware(name);
    EXPECT_EQ(h.name, name);
    EXPECT_GT(h.memory_bandwidth_bps, 0.0);
    // sm_count, clock, L2, memory, bandwidth, link bandwidth and latency, one per peak.
    EXPECT_GE(h.sources.size(), 8u) << name;
  }
}

TEST(HardwareSpec, H100SxmDatasheetFigures) {
  HardwareSpec h = load_hardware("h100-sxm", kProfileNone);
  EXPECT_EQ(h.sm_count, 132);
  EXPECT_DOUBLE_EQ(*h.peak_flops(DType::bf16), 989.4e12);
  EXPECT_DOUBLE_EQ(*h.peak_flops(DType::fp8), 1978.9e12);
  EXPECT_DOUBLE_EQ(h.memory_bandwidth_bps, 3.35e12);
  EXPECT_DOUBLE_EQ(h.memory_bytes, 81559.0 * 1024 * 1024);
  EXPECT_FALSE(h.supports(DType::int4));
}

TEST(HardwareSpec, OlderGpusLackBf16) {
  EXPECT_FALSE(load_hardware("t4").supports(DType::bf16));
  EXPECT_FALSE(load_hardware("v100").supports(DType::bf16));
  EXPECT_TRUE(load_hardware("a100-80g").supports(DType::bf16));
  EXPECT_FALSE(load_hardware("a100-80g").supports(DType::fp8));
}

TEST(HardwareSpec, UnknownNameListsKnown) {
  try {
    load_hardware("h900");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("h100-sxm"), std::string::npos);
  }
}

TEST(HardwareSpec, BadSheetsAreInputErrors) {
  auto dir =
      std::filesystem::temp_directory_path() / ("inferlab_hw_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    auto path = dir / name;
    std::ofstream(path) << text;
    return path.string();
  };
  EXPECT_THROW(load_hardware(write("trunc.json", "{\"name\": \"x\", ")), InputError);
  EXPECT_THROW(load_hardware(write("empty.json", "{}")), InputError);
  EXPECT_THROW(load_hardware((dir / "missing.json").string()), InputError);
  // A number without its source is rejected.
  std::string sheet =
      std::filesystem::path(inferlab::testing::test_data_dir()) / "hardware" / "h100-sxm.json";
  std::ifstream in(sheet);
  nlohmann::json j = nlohmann::json::parse(in);
  j["sm_count"] = 132;
  EXPECT_THROW(load_hardware(write("nosource.json", j.dump())), InputError);
  j["sm_count"] = {{"value", -5}, {"source", "x"}};
  EXPECT_THROW(load_hardware(write("negative.json", j.dump())), InputError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace inferlab
