// `fit --engine`, `validate --engine` and the engine switches of `predict --framework inferlab`:
// a round trip on the committed synthetic profile, and the error paths (exit 2 for bad input,
// exit 1 for a bound exceeded).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.hpp"

namespace inferlab {
namespace {

using testing::expect_refused;
using testing::run_inferlab;

std::string synthetic() {
  return (std::filesystem::path(testing::test_data_dir()).parent_path() / "tests" / "fit" / "data" /
          "engine_profile_synthetic.json")
      .string();
}

std::filesystem::path scratch() {
  const auto dir = std::filesystem::temp_directory_path() / "inferlab_engine_calibration_cli";
  std::filesystem::create_directories(dir);
  return dir;
}

// An extension must add kernels and keeps the base's step constants: profiles the base already
// covers, the step constants given again, a base that is not there: errors, exit 2.
TEST(EngineCalibrationCli, AnExtensionThatAddsNothingIsRefused) {
  const std::string costs = (scratch() / "base.json").string();
  ASSERT_EQ(run_inferlab("fit --engine --data " + synthetic() + " --out " + costs).exit_code, 0);
  auto same = run_inferlab("fit --engine --base " + costs + " --data " + synthetic());
  EXPECT_EQ(same.exit_code, 2);
  EXPECT_NE(same.err.find("inferlab: error: fit --engine --base: these profiles measure no kernel "
                          "the base lacks"),
            std::string::npos)
      << same.err;
  auto constants =
      run_inferlab("fit --engine --base " + costs + " --sync-pass-us 3 --data " + synthetic());
  EXPECT_EQ(constants.exit_code, 2);
  EXPECT_NE(constants.err.find("keeps the base's step constants"), std::string::npos)
      << constants.err;
  auto missing = run_inferlab("fit --engine --base " + (scratch() / "absent.json").string() +
                              " --data " + synthetic());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("inferlab: error:"), std::string::npos) << missing.err;
}

TEST(EngineCalibrationCli, FitThenValidateThenPredict) {
  const std::string costs = (scratch() / "h200.json").string();
  auto fit =
      run_inferlab("fit --engine --data " + synthetic() + " --out " + costs + " --format json");
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto fitted = nlohmann::json::parse(fit.out);
  EXPECT_EQ(fitted["kind"], "engine_costs");
  EXPECT_EQ(fitted["hardware"], "h200");
  EXPECT_EQ(fitted["fit"]["held_out_points_not_used"], 2);
  EXPECT_TRUE(fitted["kernels"].contains("gemm_qkv/gemv_fused/int4"));
  EXPECT_TRUE(std::filesystem::exists(costs));

  auto validate = run_inferlab("validate --engine --engine-costs " + costs + " --data " +
                               synthetic() + " --split holdout --format json");
  ASSERT_EQ(validate.exit_code, 0) << validate.err;
  const auto report = nlohmann::json::parse(validate.out);
  EXPECT_EQ(report["kind"], "engine_validation");
  EXPECT_EQ(report["steps"].size(), 2u);
  EXPECT_TRUE(report["groups"].contains("prefill"));
  EXPECT_TRUE(report["groups"].contains("decode"));
  EXPECT_TRUE(report["groups"].contains("kernel:gemm_qkv"));
  for (const auto& s : report["steps"]) EXPECT_EQ(s["split"], "holdout");

  for (const char* format : {"table", "csv"}) {
    auto other = run_inferlab("validate --engine --engine-costs " + costs + " --data " +
                              synthetic() + " --format " + format + " --cases");
    EXPECT_EQ(other.exit_code, 0) << other.err;
    EXPECT_NE(other.out.find("gemm_qkv"), std::string::npos);
  }

  // A bound nothing can meet: exit 1, the report still printed.
  auto over = run_inferlab("validate --engine --engine-costs " + costs + " --data " + synthetic() +
                           " --max-mape prefill=0.0000001 --format json");
  EXPECT_EQ(over.exit_code, 1);
  EXPECT_NE(over.err.find("accuracy below bounds"), std::string::npos) << over.err;
  EXPECT_FALSE(nlohmann::json::parse(over.out)["over_bounds"].empty());

  // predict uses the file for --framework inferlab on its hardware, and says what it priced by.
  auto predict = run_inferlab(
      "predict --model llama-3.2-1b --hardware h200 --framework inferlab --weights int4 "
      "--fusion on --engine-costs " +
      costs + " --batch 1 --input 512 --output 4 --format json");
  ASSERT_EQ(predict.exit_code, 0) << predict.err;
  const auto p = nlohmann::json::parse(predict.out);
  EXPECT_EQ(p["cost_model"], "engine");
  EXPECT_EQ(p["fusion"], true);
  EXPECT_NE(p["cost_source"].get<std::string>().find(costs), std::string::npos);
}

TEST(EngineCalibrationCli, BadInputIsExitTwo) {
  const auto dir = scratch();
  const std::string broken = (dir / "broken.json").string();
  std::ofstream(broken) << "{\"kind\": \"engine_profile\"";
  nlohmann::json held = nlohmann::json::parse(std::ifstream(synthetic()));
  for (auto& point : held["points"]) point["split"] = "holdout";
  const std::string all_held = (dir / "all_held.json").string();
  std::ofstream(all_held) << held.dump();
  nlohmann::json other_gpu = nlohmann::json::parse(std::ifstream(synthetic()));
  other_gpu["hardware"] = "h100-sxm";
  const std::string h100 = (dir / "h100.json").string();
  std::ofstream(h100) << other_gpu.dump();
  const std::string costs = (dir / "costs_for_errors.json").string();
  ASSERT_EQ(run_inferlab("fit --engine --data " + synthetic() + " --out " + costs).exit_code, 0);
  const std::string base = "predict --model llama-3.2-1b --batch 1 --input 64 --output 2 ";
  expect_refused({
      "fit --engine --data " + (dir / "missing.json").string(),
      "fit --engine --data " + broken,
      "fit --engine --data " + all_held,
      "fit --engine --data " + synthetic() + " " + h100,
      "fit --engine",
      "fit --engine --data " + synthetic() + " --sustained x.json",
      // The step constants measured apart from the profiles: out of range or not numbers.
      "fit --engine --data " + synthetic() + " --sync-pass-us -1",
      "fit --engine --data " + synthetic() + " --sync-pass-us abc",
      "fit --engine --data " + synthetic() + " --model-switch-us-per-layer 5000",
      "fit --engine --data " + synthetic() + " --decode-cta-gbps -3",
      "fit --engine --data " + synthetic() + " --combine-trip-us -0.5",
      "fit --engine --data " + synthetic() + " --combine-trip-us 5000",
      "fit --engine --data " + synthetic() + " --combine-trip-us abc",
      "fit --engine --data " + synthetic() + " --base " + costs + " --combine-trip-us 0.7",
      // The engine's measured constants without --engine.
      "fit --hardware h100-sxm --combine-trip-us 0.7",
      "fit --hardware h100-sxm --sync-pass-us 16.3",
      "validate --engine --data " + broken,
      "validate --engine --data " + synthetic() + " --engine-costs " + costs +
          " --max-mape prefill",
      "validate --engine --data " + synthetic() + " --engine-costs " + costs +
          " --max-mape nonsense=0.1",
      "validate --engine --data " + synthetic() + " --engine-costs " + costs +
          " --max-mape prefill=-1",
      "validate --engine --data " + synthetic() + " --engine-costs " + broken,
      "validate --engine --data " + synthetic() + " --split nothing",
      "validate --data " + synthetic() + " " + synthetic(),
      base + "--framework vllm --gemv off",
      base + "--framework pytorch --fusion on",
      base + "--framework vllm --engine-costs none",
      base + "--framework inferlab --fusion maybe",
      base + "--framework inferlab --activations fp8",
      base + "--framework inferlab --hardware h100-sxm --engine-costs " + costs,
      base + "--framework inferlab --hardware h200 --engine-costs " + broken,
      base + "--framework inferlab --hardware a100-80g --weights fp8",
  });
}

// Without engine costs for the GPU, `--framework inferlab` keeps today's pricing and its note.
TEST(EngineCalibrationCli, WithoutEngineCostsTodaysPricingAndItsNote) {
  auto r = run_inferlab(
      "predict --model llama-3.2-1b --hardware h100-sxm --framework inferlab --engine-costs none "
      "--batch 1 --input 512 --output 4 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto p = nlohmann::json::parse(r.out);
  EXPECT_EQ(p["cost_model"], "calibrated");
  bool noted = false;
  for (const auto& note : p["unvalidated"]) {
    noted |=
        note.get<std::string>().find("no engine calibration for h100-sxm") != std::string::npos;
  }
  EXPECT_TRUE(noted) << p["unvalidated"].dump();
}

// The shipped H200 calibration is the fit of the profiles its file lists, with the two loop
// constants and the straggler rate it was given (its source says so), extended by the kernels of
// the profiles its extension lists (the mixtures of experts' router and experts, MEASUREMENTS
// §50); and the fit says that the base profiles do not pin the host's time per eager launch down
// (MEASUREMENTS §47).
TEST(EngineCalibrationCli, ShippedH200EngineCostsAreTheFitOfTheirProfiles) {
  const std::filesystem::path repo = std::filesystem::path(testing::test_data_dir()).parent_path();
  const auto shipped = nlohmann::json::parse(std::ifstream(repo / "data/engine_costs/h200.json"));
  auto paths = [&](const nlohmann::json& list) {
    std::string files;
    for (const auto& f : list) files += " " + (repo / f.get<std::string>()).string();
    return files;
  };
  const auto dir = std::filesystem::temp_directory_path() / "inferlab_shipped_h200_costs";
  std::filesystem::create_directories(dir);
  const std::string base = (dir / "base.json").string();
  auto base_fit = run_inferlab(
      "fit --engine --format json --decode-cta-gbps 35 --sync-pass-us 16.3 "
      "--model-switch-us-per-layer 4.73 --combine-trip-us 0.7 --out " +
      base + " --data" + paths(shipped["fit"]["files"]));
  ASSERT_EQ(base_fit.exit_code, 0) << base_fit.err;
  ASSERT_EQ(shipped["fit"]["extensions"].size(), 1u);
  auto fit = run_inferlab("fit --engine --format json --base " + base + " --data" +
                          paths(shipped["fit"]["extensions"][0]["files"]));
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto got = nlohmann::json::parse(fit.out);
  EXPECT_EQ(got["fit"]["extensions"][0]["keys"], shipped["fit"]["extensions"][0]["keys"]);
  auto near = [](double a, double b) { return std::fabs(a - b) <= 1e-9 * std::fabs(b) + 1e-15; };
  for (const auto& [name, value] : shipped["steps"].items()) {
    EXPECT_TRUE(near(got["steps"][name].get<double>(), value.get<double>())) << name;
  }
  ASSERT_EQ(got["kernels"].size(), shipped["kernels"].size());
  for (const auto& [key, params] : shipped["kernels"].items()) {
    for (const char* p : {"t0_s", "compute_efficiency", "memory_efficiency", "input_kib_s",
                          "combine_trip_s", "cta_fixed_s", "cta_efficiency", "serial_fraction"}) {
      EXPECT_TRUE(near(got["kernels"][key][p].get<double>(), params[p].get<double>()))
          << key << " " << p;
    }
  }
  bool said = false;
  const auto base_json = nlohmann::json::parse(base_fit.out);
  for (const auto& note : base_json["fit"]["notes"]) {
    said = said || note.get<std::string>().find("host's time per eager launch is not identified") !=
                       std::string::npos;
  }
  EXPECT_TRUE(said) << base_json["fit"]["notes"].dump();
}

}  // namespace
}  // namespace inferlab

namespace inferlab {
namespace {

// The committed H100 engine costs are the fit of the committed H100 engine profiles (so a change
// of the kernel list or of the fit that moves them shows here, and they are refitted with it).
TEST(EngineCalibrationCli, CommittedH100EngineCostsAreTheFitOfTheCommittedProfiles) {
  const auto validation =
      std::filesystem::path(testing::test_data_dir()).parent_path() / "validation" / "data";
  std::string files;
  for (const char* name : {"llama-3-8b_ablation_cublaslt_eager", "llama-3-8b_ablation_gemv_eager",
                           "llama-3-8b_ablation_gemv_graphs", "llama-3-8b_graphs",
                           "llama-3.2-1b_graphs", "llama-3.2-3b_graphs"}) {
    files +=
        " " +
        (validation / ("engine_profile_h100_" + std::string(name) + "_2026-11-23.json")).string();
  }
  auto fit = run_inferlab("fit --engine --format json --data" + files);
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto got = nlohmann::json::parse(fit.out);
  const auto committed =
      nlohmann::json::parse(std::ifstream(validation / "engine_costs_h100-sxm_2026-11-23.json"));
  auto near = [](double a, double b) { return std::fabs(a - b) <= 1e-9 * std::fabs(b) + 1e-15; };
  for (const auto& [name, value] : committed["steps"].items()) {
    EXPECT_TRUE(near(got["steps"][name].get<double>(), value.get<double>())) << name;
  }
  ASSERT_EQ(got["kernels"].size(), committed["kernels"].size());
  for (const auto& [key, params] : committed["kernels"].items()) {
    for (const char* p : {"t0_s", "compute_efficiency", "memory_efficiency"}) {
      EXPECT_TRUE(near(got["kernels"][key][p].get<double>(), params[p].get<double>()))
          << key << " " << p;
    }
  }
}

}  // namespace
}  // namespace inferlab
