// `validate --host` and `probe --host-only` from the command line.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "probe/probe.hpp"
#include "test_support.hpp"

namespace inferlab {
namespace {

using testing::run_inferlab;

nlohmann::json run_json(const std::string& args) {
  return testing::run_inferlab_json(args, /*quiet_stderr=*/false);
}

std::string data_file(const std::string& name) {
  return testing::test_data_dir() + "/../validation/data/" + name;
}

// The H200's eager steps priced from its own host file, or from today's H100 constants: the
// graph steps differ only by the measured graph launch, the eager ones by the host.
TEST(HostCli, ValidateUsesTheHardwaresHostFileUnlessToldOtherwise) {
  const std::string args = "validate --hardware h200 --profile none --cost calibrated --data " +
                           data_file("torch_reference_h200_2026-11-22.json");
  const auto measured = run_json(args);
  const auto today = run_json(args + " --host none");
  EXPECT_EQ(measured["host_source"].get<std::string>().rfind("host rule on measured host "
                                                             "data/hosts/h200.json",
                                                             0),
            0u)
      << measured["host_source"];
  EXPECT_NE(today["host_source"].get<std::string>().find("today's constants"), std::string::npos);
  EXPECT_NE(measured["groups"]["decode_eager"]["mape"], today["groups"]["decode_eager"]["mape"]);
  EXPECT_EQ(measured["groups"]["gemm"]["mape"], today["groups"]["gemm"]["mape"]);
  // A host file given by path is read the same way.
  const auto by_path = run_json(args + " --host " + testing::test_data_dir() + "/hosts/h200.json");
  EXPECT_EQ(by_path["groups"]["decode_eager"]["mape"], measured["groups"]["decode_eager"]["mape"]);
}

TEST(HostCli, AGpuWithoutAHostMeasurementIsMarkedAPlaceholder) {
  const auto j = run_json("validate --hardware t4 --data " +
                          data_file("host_rule_steps_h100_2026-11-22b_fit.json"));
  EXPECT_EQ(j["host_source"].get<std::string>().rfind("PLACEHOLDER", 0), 0u) << j["host_source"];
  const auto text = run_inferlab("validate --hardware t4 --data " +
                                 data_file("host_rule_steps_h100_2026-11-22b_fit.json"));
  EXPECT_NE(text.out.find("host: PLACEHOLDER"), std::string::npos) << text.out;
}

TEST(HostCli, AHostFileWithoutADispatchCostIsRefused) {
  const auto r = run_inferlab("validate --hardware h100-sxm --host " +
                              data_file("host_session_h100_2026-11-22.json") + "x --data " +
                              data_file("host_rule_steps_h100_2026-11-22b_fit.json"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("inferlab: error: ", 0), 0u) << r.err;
  const auto engine = run_inferlab("validate --engine --host none --data x.json");
  EXPECT_EQ(engine.exit_code, 2);
  EXPECT_NE(engine.err.find("--host"), std::string::npos) << engine.err;
}

TEST(HostCli, ProbeHostOnlyWithoutAGpuSaysSo) {
  if (visible_gpu_count() > 0) GTEST_SKIP() << "a GPU is visible: the probe would run";
  const auto out = std::filesystem::temp_directory_path() / "inferlab_host_only.json";
  std::filesystem::remove(out);
  const auto r = run_inferlab("probe --host-only --out " + out.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("GPU"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  const auto both = run_inferlab("probe --host-only --collectives-only --out " + out.string());
  EXPECT_EQ(both.exit_code, 2);
}

}  // namespace
}  // namespace inferlab
