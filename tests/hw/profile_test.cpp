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

namespace inferlab {
namespace {

nlohmann::json curve_row(const char* collective, int64_t bytes, double seconds) {
  return {{"collective", collective}, {"bytes", bytes}, {"devices", 2}, {"median_s", seconds}};
}

// transfer_s by hand: points (1000 B, 10 us), (3000 B, 30 us), (7000 B, 50 us); the floor is
// 10 us. 2000 B: 20 - 10 = 10 us; 5000 B: 30 + 2000 x 5 ns - 10 = 30 us; past the end, 9000 B:
// 50 + 2000 x 5 ns - 10 = 50 us; 500 B: 0.
TEST(CollectiveCurves, InterpolatesAboveTheSmallestMessage) {
  nlohmann::json doc = {
      {"points",
       {curve_row("all_reduce", 3000, 30e-6), curve_row("all_reduce", 1000, 10e-6),
        curve_row("all_reduce", 7000, 50e-6), curve_row("all_gather", 1000, 12e-6),
        curve_row("all_gather", 2000, 13e-6)}}};
  const CollectiveCurves curves = parse_collective_curves(doc, "test");
  const CollectiveCurve* ar = curves.find(Collective::all_reduce, 2);
  ASSERT_NE(ar, nullptr);
  EXPECT_NEAR(ar->transfer_s(2000), 10e-6, 1e-15);
  EXPECT_NEAR(ar->transfer_s(5000), 30e-6, 1e-15);
  EXPECT_NEAR(ar->transfer_s(9000), 50e-6, 1e-15);
  EXPECT_EQ(ar->transfer_s(500), 0.0);
  EXPECT_EQ(curves.find(Collective::all_reduce, 4), nullptr);
  EXPECT_NEAR(curves.find(Collective::all_gather, 2)->transfer_s(2000), 1e-6, 1e-15);
  EXPECT_TRUE(parse_collective_curves(nlohmann::json::object(), "test").empty());
}

// A dip (3000 B measured faster than 1000 B) is raised to the smaller size's time: 3000 B costs
// what 1000 B does, and past the end the last segment (3000 -> 5000 B: 10 -> 20 us) goes on
// rising: 7000 B = 20 + 2000 x 5 ns - 10 = 20 us.
TEST(CollectiveCurves, NeverFallsWithSize) {
  nlohmann::json doc = {{"points",
                         {curve_row("all_reduce", 1000, 10e-6), curve_row("all_reduce", 3000, 8e-6),
                          curve_row("all_reduce", 5000, 20e-6)}}};
  const CollectiveCurves curves = parse_collective_curves(doc, "test");
  const CollectiveCurve* ar = curves.find(Collective::all_reduce, 2);
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->transfer_s(3000), 0.0);
  EXPECT_NEAR(ar->transfer_s(7000), 20e-6, 1e-15);
}

TEST(CollectiveCurves, BrokenRowsAreInputErrors) {
  const std::vector<nlohmann::json> broken = {
      {{"points", {curve_row("broadcast", 1000, 1e-5), curve_row("broadcast", 2000, 2e-5)}}},
      {{"points", {curve_row("all_reduce", 1000, -1.0), curve_row("all_reduce", 2000, 2e-5)}}},
      {{"points", {curve_row("all_reduce", 0, 1e-5), curve_row("all_reduce", 2000, 2e-5)}}},
      {{"points", {curve_row("all_reduce", 1000, 1e-5)}}},  // one size is no curve
      {{"points", {curve_row("all_reduce", 1000, 1e-5), curve_row("all_reduce", 1000, 2e-5)}}},
      {{"points",
        {{{"collective", "all_reduce"}, {"bytes", 1000}, {"devices", 1e300}, {"median_s", 1e-5}}}}},
      {{"points", "many"}},
  };
  for (const auto& doc : broken) {
    EXPECT_THROW(parse_collective_curves(doc, "test"), InputError) << doc.dump();
  }
}

nlohmann::json in_stream_row(const char* library, const char* mode, int64_t bytes, double s) {
  nlohmann::json row = curve_row("all_reduce", bytes, s);
  row["library"] = library;
  row["mode"] = mode;
  return row;
}

// The "collectives" section splits by library and launch mode; call_s prices a call whole:
// (1000 B, 6 us), (5000 B, 10 us): 3000 B = 8 us, 500 B = 6 us (the smallest size's), 9000 B =
// 10 + 4000 x 1 ns = 14 us.
TEST(CollectiveCurves, InStreamSectionSplitsByLibraryAndMode) {
  nlohmann::json doc = {
      {"points",
       {in_stream_row("nccl", "graph", 1000, 6e-6), in_stream_row("nccl", "graph", 5000, 10e-6),
        in_stream_row("nccl", "eager", 1000, 9e-6), in_stream_row("nccl", "eager", 5000, 14e-6),
        in_stream_row("one_shot", "graph", 1000, 5e-6),
        in_stream_row("one_shot", "graph", 5000, 12e-6)}}};
  const InStreamCollectives curves = parse_in_stream_collectives(doc, "test");
  const CollectiveCurve* graph = curves.nccl_graph.find(Collective::all_reduce, 2);
  ASSERT_NE(graph, nullptr);
  EXPECT_NEAR(graph->call_s(3000), 8e-6, 1e-15);
  EXPECT_NEAR(graph->call_s(500), 6e-6, 1e-15);
  EXPECT_NEAR(graph->call_s(9000), 14e-6, 1e-15);
  EXPECT_NEAR(curves.nccl_eager.find(Collective::all_reduce, 2)->call_s(1000), 9e-6, 1e-15);
  EXPECT_NEAR(curves.one_shot_graph.find(Collective::all_reduce, 2)->call_s(5000), 12e-6, 1e-15);
  EXPECT_TRUE(curves.one_shot_eager.empty());
  for (const auto& bad : {in_stream_row("rccl", "graph", 1000, 6e-6),
                          in_stream_row("nccl", "replayed", 1000, 6e-6)}) {
    nlohmann::json broken = {{"points", {bad, in_stream_row("nccl", "graph", 5000, 10e-6)}}};
    EXPECT_THROW(parse_in_stream_collectives(broken, "test"), InputError) << bad.dump();
  }
  nlohmann::json unnamed = {{"points", {curve_row("all_reduce", 1000, 6e-6)}}};
  EXPECT_THROW(parse_in_stream_collectives(unnamed, "test"), InputError);
}

// An eager call inside a queued stream: the graph curve plus eager launch's addition per call,
// eager - graph where a sample held several calls. Graph (1000 B, 6 us), (4000 B, 9 us),
// (16000 B, 30 us); eager (1000 B, 10 us, 50 calls), (4000 B, 11 us, 4 calls), (16000 B, 60 us,
// 1 call): additions 4 us and 2 us, the single-call sample's 30 us not used. 2500 B: graph 7.5
// + 3 = 10.5 us; 500 B: 6 + 4; 10000 B: 19.5 + 2 (held past 4000 B); 16000 B: 30 + 2.
TEST(CollectiveCurves, EagerCallAddsWhatEagerLaunchAddsPerCall) {
  auto row = [](const char* mode, int64_t bytes, double s, int calls) {
    nlohmann::json r = in_stream_row("nccl", mode, bytes, s);
    r["calls_per_sample"] = calls;
    return r;
  };
  nlohmann::json doc = {{"points",
                         {row("graph", 1000, 6e-6, 50), row("graph", 4000, 9e-6, 4),
                          row("graph", 16000, 30e-6, 1), row("eager", 4000, 11e-6, 4),
                          row("eager", 1000, 10e-6, 50), row("eager", 16000, 60e-6, 1)}}};
  const InStreamCollectives curves = parse_in_stream_collectives(doc, "test");
  const CollectiveCurve& graph = *curves.nccl_graph.find(Collective::all_reduce, 2);
  const CollectiveCurve* eager = curves.nccl_eager.find(Collective::all_reduce, 2);
  ASSERT_NE(eager, nullptr);
  EXPECT_EQ(eager->calls_per_sample, (std::vector<int>{50, 4, 1}));  // sorted with the sizes
  EXPECT_NEAR(eager_call_s(graph, eager, 2500), 10.5e-6, 1e-15);
  EXPECT_NEAR(eager_call_s(graph, eager, 500), 10e-6, 1e-15);
  EXPECT_NEAR(eager_call_s(graph, eager, 10000), 21.5e-6, 1e-15);
  EXPECT_NEAR(eager_call_s(graph, eager, 16000), 32e-6, 1e-15);
  EXPECT_NEAR(eager_call_s(graph, nullptr, 2500), 7.5e-6, 1e-15);
  // Without calls_per_sample every size counts: 16000 B adds its own 30 us.
  nlohmann::json bare = {{"points",
                          {in_stream_row("nccl", "eager", 1000, 10e-6),
                           in_stream_row("nccl", "eager", 16000, 60e-6)}}};
  const InStreamCollectives unsaid = parse_in_stream_collectives(bare, "test");
  EXPECT_NEAR(eager_call_s(graph, unsaid.nccl_eager.find(Collective::all_reduce, 2), 16000), 60e-6,
              1e-15);
}

}  // namespace
}  // namespace inferlab
