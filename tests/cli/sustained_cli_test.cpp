// The GPU's measured sustained clock (its power cap under tensor-core load), applied by default
// where one is shipped (data/sustained/<hardware>.json) by predict, step, sweep and serve, said
// in their headers, and chosen with --sustained auto|none|FILE.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace inferlab {
namespace {

using testing::run_inferlab;
using testing::test_data_dir;

nlohmann::json run_json(const std::string& args) {
  return testing::run_inferlab_json(args);
}

std::string shipped(const std::string& hardware) {
  return test_data_dir() + "/sustained/" + hardware + ".json";
}
std::string validation_file(const std::string& name) {
  return test_data_dir() + "/../validation/data/" + name;
}

// The H200's measurement (validation/data/sustained_load_h200_2026-11-23.json, shipped as
// data/sustained/h200.json): every GEMM alone had already throttled, so the pair whose alone run
// kept the highest clock (1830 MHz) gives the ratio, 2048 x 14336 x 4096 back to back over alone.
constexpr double kH200Slowdown = 0.00037116737365722657 / 0.0003131999969482422;  // 1.185

// The numbers of a prediction without the header fields that name where the clock came from.
nlohmann::json numbers_of(nlohmann::json j) {
  j.erase("sustained_clock");
  j.erase("cost_source");
  return j;
}

TEST(SustainedClockCli, PredictOnTheH200AppliesTheShippedClockAndSaysSo) {
  const std::string base = "predict --model llama-3-8b --hardware h200 --batch 1 --input 2048";
  const auto by_default = run_json(base);
  const auto& clock = by_default["sustained_clock"];
  EXPECT_EQ(clock["from"], "file");
  EXPECT_EQ(clock["file"], "data/sustained/h200.json");
  EXPECT_DOUBLE_EQ(clock["compute_slowdown"].get<double>(), kH200Slowdown);
  EXPECT_NE(clock["note"].get<std::string>().find("1.185 (a lower bound"), std::string::npos);
  // The same as naming the shipped file, or the measurement it is a copy of.
  for (const std::string& file :
       {shipped("h200"), validation_file("sustained_load_h200_2026-11-23.json")}) {
    const auto named = run_json(base + " --sustained " + file);
    EXPECT_EQ(numbers_of(named), numbers_of(by_default)) << file;
    EXPECT_EQ(named["sustained_clock"]["file"], file);
  }
  EXPECT_EQ(numbers_of(run_json(base + " --sustained auto")), numbers_of(by_default));
  // The text header says it.
  auto text = run_inferlab(base);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("\nsustained clock: sustained-compute slowdown 1.185"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("from data/sustained/h200.json (2026-11-23T15:01:27Z)"),
            std::string::npos);
  auto off = run_inferlab(base + " --sustained none");
  EXPECT_NE(off.out.find("\nsustained clock: none (--sustained none)\n"), std::string::npos);
}

// A compute-bound step: the step predictor scales the compute time of every compute-bound
// operator by f = 1 + (slowdown - 1) x (their share of the step's GPU time without it), and
// leaves the others alone (predict/step_predictor.cpp).
TEST(SustainedClockCli, ComputeBoundStepSlowsByTheMeasuredFactor) {
  const std::string base = "step --model llama-3-8b --hardware h200 --phase prefill --tokens 8192";
  const auto none = run_json(base + " --sustained none");
  const auto on = run_json(base);
  EXPECT_EQ(none["sustained_clock"]["from"], "none");
  EXPECT_EQ(none["sustained_clock"]["compute_slowdown"], 1.0);
  const double gpu_none_ms = none["gpu_ms"].get<double>();
  double compute_bound_ms = 0.0;
  for (const auto& op : none["ops"]) {
    if (op["bound"] == "compute") compute_bound_ms += op["ms"].get<double>();
  }
  const double share = compute_bound_ms / gpu_none_ms;
  EXPECT_GT(share, 0.9);  // compute bound
  const double f = 1.0 + (kH200Slowdown - 1.0) * share;
  ASSERT_EQ(none["ops"].size(), on["ops"].size());
  for (size_t i = 0; i < none["ops"].size(); ++i) {
    const auto& a = none["ops"][i];
    const auto& b = on["ops"][i];
    const double ratio = b["ms"].get<double>() / a["ms"].get<double>();
    if (a["bound"] == "compute") {
      // Only the compute part scales: a GEMM's fixed cost (about a microsecond) does not.
      EXPECT_LE(ratio, f * (1 + 1e-12)) << a["name"];
      EXPECT_GE(ratio, 1.0 + 0.99 * (f - 1.0)) << a["name"];
    } else {
      EXPECT_EQ(a["ms"], b["ms"]) << a["name"];
    }
  }
  const double added_ms = on["gpu_ms"].get<double>() - gpu_none_ms;
  EXPECT_LE(added_ms, (f - 1.0) * compute_bound_ms * (1 + 1e-12));
  EXPECT_GE(added_ms, 0.99 * (f - 1.0) * compute_bound_ms);
  // Memory-bound decode keeps its boost clock: nothing compute bound, nothing slower.
  const std::string decode = "step --model llama-3-8b --hardware h200 --phase decode --context 512";
  EXPECT_EQ(run_json(decode)["ms"], run_json(decode + " --sustained none")["ms"]);
}

// The H100's calibration was fitted with its own measurement already (MEASUREMENTS §7): the
// shipped copy gives the very same slowdown, which replaces (never multiplies) the
// calibration's, so H100 predictions are what they were before the default existed.
TEST(SustainedClockCli, H100PredictionsAreUnchanged) {
  std::ifstream calibration(test_data_dir() + "/calibrated/h100-sxm.json");
  const auto params = nlohmann::json::parse(calibration)["params"];
  const std::string base = "predict --model llama-3-8b --hardware h100-sxm";
  const auto prefill = run_json(base + " --batch 1 --input 2048 --output 128");
  EXPECT_EQ(prefill["sustained_clock"]["file"], "data/sustained/h100-sxm.json");
  EXPECT_EQ(prefill["sustained_clock"]["compute_slowdown"].get<double>(),
            params["sustained_compute_slowdown"].get<double>());
  // Computed at d36eed5, before the default: update both when the model changes.
  EXPECT_NEAR(prefill["prefill_ms"].get<double>(), 46.99155301074385, 1e-9);
  EXPECT_NEAR(prefill["tpot_ms"].get<double>(), 6.631784269387322, 1e-9);
  const auto batch = run_json(base + " --batch 32 --input 512 --output 128");
  EXPECT_NEAR(batch["prefill_ms"].get<double>(), 365.77358533637226, 1e-8);
  EXPECT_NEAR(batch["tpot_ms"].get<double>(), 7.237599993608096, 1e-9);
  // Off, the compute-bound prefill is faster; the decode step is memory bound.
  const auto off = run_json(base + " --batch 1 --input 2048 --output 128 --sustained none");
  EXPECT_LT(off["prefill_ms"].get<double>(), prefill["prefill_ms"].get<double>() / 1.1);
}

TEST(SustainedClockCli, StepSweepAndServeSayWhichClockTheyApplied) {
  const std::string h200 = " --model llama-3-8b --hardware h200";
  for (const std::string& command : std::vector<std::string>{
           "step --phase prefill --tokens 512" + h200, "sweep --batch 1,8" + h200,
           "serve --requests 20 --rate 2" + h200}) {
    const auto j = run_json(command);
    EXPECT_EQ(j["sustained_clock"]["file"], "data/sustained/h200.json") << command;
    EXPECT_EQ(run_json(command + " --sustained none")["sustained_clock"]["from"], "none");
    auto text = run_inferlab(command);
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("sustained clock: sustained-compute slowdown 1.185"), std::string::npos)
        << command << "\n"
        << text.out;
  }
  // sweep's CSV stays one table.
  auto csv = run_inferlab("sweep --batch 1,8 --format csv" + h200);
  EXPECT_EQ(csv.out.rfind("batch,input,", 0), 0u) << csv.out;
  // The sweep's rows follow the clock: its prefill is the predict's.
  const auto row = run_json("sweep --batch 1 --input 2048" + h200)["rows"][0];
  EXPECT_EQ(row["prefill_ms"], run_json("predict --batch 1 --input 2048" + h200)["prefill_ms"]);
}

// Models that apply no sustained clock say so, and refuse a measurement file rather than
// ignore it; GPUs without a shipped measurement keep the calibration's.
TEST(SustainedClockCli, OtherModelsAndGpus) {
  EXPECT_EQ(run_json("predict --hardware a100-80g")["sustained_clock"]["from"], "none");
  const auto pcie = run_json("predict --hardware h100-pcie")["sustained_clock"];
  EXPECT_EQ(pcie["from"], "calibration");
  EXPECT_NE(pcie["note"].get<std::string>().find("carried over to h100-pcie"), std::string::npos);
  const auto engine = run_json("predict --hardware h200 --framework inferlab")["sustained_clock"];
  EXPECT_EQ(engine["from"], "none");
  EXPECT_EQ(engine["compute_slowdown"], 1.0);
  const auto tilesim = run_json("predict --hardware h100-sxm --cost tilesim")["sustained_clock"];
  EXPECT_EQ(tilesim["from"], "template");
}

// validate keeps the calibration's slowdown unless told (its accuracy guards and quoted figures
// rest on that), and takes the same choices.
TEST(SustainedClockCli, ValidateKeepsTheCalibrationsUnlessTold) {
  const std::string base = "validate --hardware h200 --cost calibrated --data " +
                           validation_file("torch_reference_h200_2026-11-22.json");
  const auto calibration = run_json(base);
  EXPECT_EQ(calibration["cost_source"].get<std::string>().find("replaced"), std::string::npos);
  const auto automatic = run_json(base + " --sustained auto");
  const auto named = run_json(base + " --sustained " + shipped("h200"));
  EXPECT_EQ(automatic["groups"], named["groups"]);
  EXPECT_NE(automatic["groups"], calibration["groups"]);
}

class SustainedClockCliFiles : public ::testing::Test {
 protected:
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("inferlab_sustained_" + std::to_string(::getpid()));
  void SetUp() override { std::filesystem::create_directories(dir); }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

TEST_F(SustainedClockCliFiles, MissingOrMalformedFilesAreInputErrors) {
  const std::string idle = R"({"label": "idle", "sm_mhz_median": 1980})";
  struct Case {
    std::string file, expect;
  } cases[] = {
      {"/nonexistent/sustained.json", "does not exist"},
      {write("truncated.json", "{\"runs\": ["), "not valid JSON"},
      {write("no_runs.json", "{\"device\": \"H200\"}"), "missing array 'runs'"},
      {write("no_idle.json", R"({"runs": []})"), "no 'idle' run"},
      {write("label.json", R"({"runs": [{"label": 7}]})"), "'label' must be a string"},
      {write("no_pair.json", "{\"runs\": [" + idle + "]}"), "no gemm_alone run"},
      {write("huge.json",
             "{\"runs\": [" + idle +
                 R"(, {"label": "gemm_alone", "sm_mhz_median": 1980, "result": {"m": 8, "n": 8,
                 "k": 8, "median_s": 1e-4}}, {"label": "gemm_back_to_back", "sm_mhz_median": 900,
                 "result": {"m": 8, "n": 8, "k": 8, "median_s": 5e-4}}]})"),
       "not a clock drop"},
  };
  // Every case through predict; the missing and the truncated file through every command.
  for (const auto& c : cases) {
    std::vector<std::string> commands = {"predict --hardware h200"};
    if (&c - cases < 2) {
      for (const char* more : {"step --hardware h200 --phase decode --context 64",
                               "sweep --hardware h200", "serve --hardware h200 --requests 5"}) {
        commands.emplace_back(more);
      }
      commands.push_back("validate --hardware h200 --data " +
                         validation_file("torch_reference_h200_2026-11-22.json"));
    }
    for (const std::string& command : commands) {
      auto r = run_inferlab(command + " --sustained " + c.file);
      EXPECT_EQ(r.exit_code, 2) << command << " " << c.file << "\n" << r.err;
      EXPECT_TRUE(r.out.empty()) << r.out;
      EXPECT_EQ(r.err.rfind("inferlab: error: ", 0), 0u) << r.err;
      EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.file << ": " << r.err;
    }
  }
  // A file given to a model that applies no sustained clock, or none to tilesim's template.
  testing::expect_refused(
      {"predict --hardware a100-80g --sustained " + shipped("h200"),
       "predict --hardware h200 --cost roofline --sustained " + shipped("h200"),
       "predict --hardware h200 --framework inferlab --sustained " + shipped("h200"),
       "predict --hardware h100-sxm --cost tilesim --sustained none"});
  auto word = run_inferlab("predict --hardware h200 --sustained off");
  EXPECT_EQ(word.exit_code, 2);
  EXPECT_NE(word.err.find("--sustained takes auto, none or a sustained-clock measurement file"),
            std::string::npos)
      << word.err;
}

}  // namespace
}  // namespace inferlab
