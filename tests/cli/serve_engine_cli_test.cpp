// `serve --executor engine`: the serving simulator's scheduler driving inferlab's engine (CPU
// reference here), the same summary fields as the simulation, and its refusals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "test_support.hpp"

namespace inferlab {
namespace {

using testing::run_inferlab;

class ServeOnEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("inferlab_serve_engine_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    const nlohmann::json config = testing::tiny_llama_config(128, 512);
    std::ofstream(dir_ / "config.json") << config.dump();
    model_ = (dir_ / "config.json").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  std::string model_;
};

TEST_F(ServeOnEngine, RunsEveryRequestAndReportsLikeTheSimulation) {
  const std::string workload =
      " --rate 100 --requests 24 --input-dist uniform:10,80 "
      "--output-dist uniform:2,10 --kv-tokens 640 --seed 5 --format json";
  auto engine = run_inferlab("serve --model " + model_ + " --executor engine --device cpu" +
                             workload + " --prefix-caching --shared-prefix tokens=32,groups=2");
  auto sim = run_inferlab("serve --model " + model_ + workload +
                          " --prefix-caching --shared-prefix tokens=32,groups=2");
  ASSERT_EQ(engine.exit_code, 0) << engine.err;
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  auto e = nlohmann::json::parse(engine.out), s = nlohmann::json::parse(sim.out);
  EXPECT_EQ(e["executor"], "engine");
  EXPECT_EQ(e["device"], "cpu");
  EXPECT_EQ(s["executor"], "sim");
  EXPECT_EQ(e["completed"].get<int>(), 24);
  // The same fields, so a measured run and a simulated one compare field by field.
  for (const auto& [key, value] : s.items()) EXPECT_TRUE(e.contains(key)) << key;
  // 640 tokens in blocks of 16, for both.
  EXPECT_EQ(e["kv_cache"]["blocks"].get<int>(), 40);
  EXPECT_EQ(s["kv_cache"]["blocks"].get<int>(), 40);
  EXPECT_GT(e["prefix_hit_rate"].get<double>(), 0.0);
}

// --tp splits the engine as the simulation assumes: the CPU reference over 2 ranks runs every
// request and reports the same pool; a degree that does not split the model is exit 2.
TEST_F(ServeOnEngine, TensorParallelEngineRunsEveryRequest) {
  const std::string workload =
      " --rate 100 --requests 8 --input-dist uniform:10,40 --output-dist uniform:2,6 "
      "--kv-tokens 640 --seed 5 --format json";
  auto split =
      run_inferlab("serve --model " + model_ + " --executor engine --device cpu --tp 2" + workload);
  ASSERT_EQ(split.exit_code, 0) << split.err;
  const auto e = nlohmann::json::parse(split.out);
  EXPECT_EQ(e["completed"].get<int>(), 8);
  EXPECT_EQ(e["kv_cache"]["blocks"].get<int>(), 40);
  auto refused =
      run_inferlab("serve --model " + model_ + " --executor engine --device cpu --tp 3" + workload);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("inferlab: error:"), std::string::npos) << refused.err;
}

// One row per iteration; device_ms is the GPU's part of duration_ms where the executor measures
// one, so on the CPU backend (no device time) and in the simulation the two are equal;
// simulated_ms is the cost model's price of that very iteration (in the simulation, its
// duration; on the engine, a price beside the measurement).
TEST_F(ServeOnEngine, IterationsCsvGivesEachIterationsWallDeviceAndSimulatedTime) {
  const std::string workload =
      " --rate 100 --requests 8 --input-dist uniform:10,40 --output-dist uniform:2,6 "
      "--kv-tokens 640 --seed 5 --format json --iterations-csv ";
  for (const std::string executor : {" --executor engine --device cpu", " --executor sim"}) {
    const auto csv = dir_ / "iterations.csv";
    auto run = run_inferlab("serve --model " + model_ + executor + workload + csv.string());
    ASSERT_EQ(run.exit_code, 0) << run.err;
    std::ifstream in(csv);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line,
              "start_s,duration_ms,prefill_tokens,decode_seqs,batch_seqs,running,waiting,"
              "kv_blocks_used,kv_use,preemptions,device_ms,simulated_ms,prefill_max_context,"
              "decode_mean_context,decode_max_context");
    int rows = 0;
    const bool simulated = executor.find("sim") != std::string::npos;
    while (std::getline(in, line)) {
      ++rows;
      std::vector<std::string> f;
      std::stringstream fields(line);
      for (std::string x; std::getline(fields, x, ',');) f.push_back(x);
      ASSERT_EQ(f.size(), 15u) << line;
      EXPECT_EQ(f[10], f[1]) << executor << ": " << line;  // device_ms = duration_ms
      EXPECT_GT(std::stod(f[11]), 0.0) << line;            // priced by the simulator
      if (simulated) {
        EXPECT_EQ(f[11], f[1]) << line;
      }
      // Contexts: a prefill's at least its chunk, none without one; a decode's past its prompt
      // (prompts of 10 tokens or more).
      if (std::stoi(f[2]) > 0) {
        EXPECT_GE(std::stoi(f[12]), 1) << line;
      } else {
        EXPECT_EQ(std::stoi(f[12]), 0) << line;
      }
      if (std::stoi(f[3]) > 0) {
        EXPECT_GE(std::stoi(f[13]), 11) << line;
        EXPECT_GE(std::stoi(f[14]), std::stoi(f[13])) << line;  // the longest, at least the mean
      }
    }
    EXPECT_GT(rows, 0) << executor;
  }
}

// --kernel-profile-csv: one row per (iteration, kernel class) where the backend profiles its
// kernels (the CPU reference does not: the header alone); the simulator runs none and refuses it.
TEST_F(ServeOnEngine, KernelProfileCsvNeedsTheEngine) {
  const auto csv = dir_ / "kernels.csv";
  const std::string workload =
      " --rate 100 --requests 4 --input-dist uniform:10,40 --output-dist uniform:2,6 "
      "--kv-tokens 640 --seed 5 --format json --kernel-profile-csv " +
      csv.string();
  auto engine =
      run_inferlab("serve --model " + model_ + " --executor engine --device cpu" + workload);
  ASSERT_EQ(engine.exit_code, 0) << engine.err;
  std::ifstream in(csv);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header, "iteration,prefill_tokens,decode_seqs,class,ms,launches");
  auto sim = run_inferlab("serve --model " + model_ + workload);
  EXPECT_EQ(sim.exit_code, 2);
  EXPECT_NE(sim.err.find("inferlab: error: --kernel-profile-csv needs --executor engine"),
            std::string::npos)
      << sim.err;
}

TEST_F(ServeOnEngine, NgramSpeculationRunsAndReportsTheMeasuredAcceptance) {
  const std::string workload =
      " --rate 100 --requests 12 --input-dist uniform:10,60 --output-dist uniform:4,12 "
      "--kv-tokens 640 --seed 5 --format json";
  auto plain =
      run_inferlab("serve --model " + model_ + " --executor engine --device cpu" + workload);
  auto spec = run_inferlab("serve --model " + model_ + " --executor engine --device cpu" +
                           workload + " --speculative draft=ngram,k=3");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(spec.exit_code, 0) << spec.err;
  auto p = nlohmann::json::parse(plain.out), s = nlohmann::json::parse(spec.out);
  EXPECT_EQ(s["completed"].get<int>(), 12);
  EXPECT_EQ(s["output_tokens_per_s"].is_number(), true);
  const double acceptance = s["draft_acceptance"].get<double>();
  EXPECT_GE(acceptance, 0.0);
  EXPECT_LE(acceptance, 1.0);
  EXPECT_EQ(p["draft_acceptance"].get<double>(), 0.0);  // nothing drafted without speculation
}

// A draft model beside the target: its KV in the target's block ids, its passes in each
// iteration's time. The target as its own draft (the same config and seed: the same random
// weights) has every draft accepted.
TEST_F(ServeOnEngine, DraftModelSpeculationRunsAndTheTargetAsItsOwnDraftKeepsEveryDraft) {
  nlohmann::json shallow = testing::tiny_llama_config(128, 512);
  shallow["num_hidden_layers"] = 1;
  const std::string draft = (dir_ / "draft.json").string();
  std::ofstream(draft) << shallow.dump();
  const std::string workload =
      " --rate 100 --requests 12 --input-dist uniform:10,60 --output-dist uniform:4,12 "
      "--kv-tokens 640 --seed 5 --format json --prefix-caching --shared-prefix tokens=16,groups=2";
  const std::string engine = "serve --model " + model_ + " --executor engine --device cpu";
  auto other = run_inferlab(engine + workload + " --speculative draft=" + draft + ",k=3");
  auto itself = run_inferlab(engine + workload + " --speculative draft=" + model_ + ",k=3");
  ASSERT_EQ(other.exit_code, 0) << other.err;
  ASSERT_EQ(itself.exit_code, 0) << itself.err;
  auto o = nlohmann::json::parse(other.out), s = nlohmann::json::parse(itself.out);
  EXPECT_EQ(o["completed"].get<int>(), 12);
  EXPECT_EQ(s["completed"].get<int>(), 12);
  EXPECT_GE(o["draft_acceptance"].get<double>(), 0.0);
  EXPECT_LE(o["draft_acceptance"].get<double>(), 1.0);
  EXPECT_EQ(s["draft_acceptance"].get<double>(), 1.0);
  EXPECT_EQ(s["kv_cache"]["blocks"].get<int>(), 40);  // the target's pool, as without a draft
}

TEST_F(ServeOnEngine, RefusesWhatItCannotRun) {
  nlohmann::json wide = testing::tiny_llama_config(256, 512);  // another vocabulary
  const std::string other_vocab = (dir_ / "other_vocab.json").string();
  std::ofstream(other_vocab) << wide.dump();
  const std::string m = "serve --model " + model_ + " --requests 3 ";
  const std::vector<std::string> cases = {
      m + "--executor gpu",
      m + "--executor engine --device cpu",  // the CPU cache needs --kv-tokens
      m + "--kv-tokens -5",
      m + "--gemm-warmup sometimes",  // checked with either executor
      m + "--executor engine --device cpu --kv-tokens 512 --speculative draft=" + other_vocab +
          ",k=2",
      m + "--max-model-len -1",
      m + "--max-model-len 513",  // past the model's context of 512
      m + "--executor engine --device cpu --kv-tokens 512 --max-model-len 600",
  };
  testing::expect_refused(cases);
}

// The rule vLLM applies: a request whose prompt + output passes the model's context (or
// --max-model-len) is refused up front. Both executors share the scheduler, so they reject the
// same requests, and the engine never sees a position past the context (the CPU backend would
// refuse one in words).
TEST_F(ServeOnEngine, RequestsPastTheContextAreRejectedAlikeByBothExecutors) {
  // Prompts 200-500 and outputs 1-100 against a context of 512: some pass it.
  const std::string workload =
      " --rate 50 --requests 20 --input-dist uniform:200,500 --output-dist uniform:1,100 "
      "--kv-tokens 2048 --seed 3 --format json";
  auto engine = run_inferlab("serve --model " + model_ + " --executor engine --device cpu" +
                             workload + " --requests-csv " + (dir_ / "requests.csv").string());
  auto sim = run_inferlab("serve --model " + model_ + workload);
  ASSERT_EQ(engine.exit_code, 0) << engine.err;
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const auto e = nlohmann::json::parse(engine.out), s = nlohmann::json::parse(sim.out);
  // Which requests pass 512: recounted from the per-request CSV (prompt + output columns).
  std::ifstream csv(dir_ / "requests.csv");
  std::string line;
  std::getline(csv, line);
  int past = 0, rows = 0;
  while (std::getline(csv, line)) {
    std::vector<std::string> f;
    std::stringstream fields(line);
    for (std::string x; std::getline(fields, x, ',');) f.push_back(x);
    ++rows;
    const int prompt = std::stoi(f[7]), output = std::stoi(f[8]);
    const bool rejected = f.back() == "1";
    EXPECT_EQ(rejected, prompt + output > 512) << line;
    past += prompt + output > 512;
  }
  EXPECT_EQ(rows, 20);
  EXPECT_GT(past, 0);  // the draw has some
  EXPECT_LT(past, 20);
  EXPECT_EQ(e["rejected"].get<int>(), past);
  EXPECT_EQ(s["rejected"].get<int>(), past);
  EXPECT_EQ(e["rejected_past_max_model_len"].get<int>(), past);
  EXPECT_EQ(s["rejected_past_max_model_len"].get<int>(), past);
  EXPECT_EQ(e["completed"].get<int>(), 20 - past);
  EXPECT_EQ(e["max_model_len"].get<int>(), 512);

  // --max-model-len below the context tightens the rule: every prompt of 200-500 plus at least
  // one output token passes 200.
  auto tight = run_inferlab("serve --model " + model_ + workload + " --max-model-len 200");
  ASSERT_EQ(tight.exit_code, 0) << tight.err;
  EXPECT_EQ(nlohmann::json::parse(tight.out)["rejected"].get<int>(), 20);
}

}  // namespace
}  // namespace inferlab
