// `serve --executor replay`: a measured run's iterations formed again and priced again. Replaying
// the simulator's own run gives its summary back and prices each iteration at what it took; a
// replay with other flags, or a file that is not an iterations CSV, is refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace inferlab {
namespace {

using testing::run_inferlab;

std::vector<std::vector<std::string>> csv_rows(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::stringstream s(line);
    for (std::string f; std::getline(s, f, ',');) fields.push_back(f);
    rows.push_back(fields);
  }
  return rows;
}

TEST(ServeReplay, ReplayingARunGivesItBackAndPricesEachIteration) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("inferlab_replay_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string flags =
      "serve --model llama-3-8b --hardware h200 --framework inferlab --requests 60 --rate 8 "
      "--input-dist lognormal:2000,0.9 --output-dist lognormal:100,0.5 --kv-tokens 60000 "
      "--prefix-caching --shared-prefix tokens=512,groups=2 --seed 4 --format json";
  const auto measured = dir / "measured.csv", replayed = dir / "replayed.csv";
  auto run = run_inferlab(flags + " --iterations-csv " + measured.string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto replay = run_inferlab(flags + " --executor replay --replay-iterations " + measured.string() +
                             " --iterations-csv " + replayed.string());
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  const auto a = nlohmann::json::parse(run.out), b = nlohmann::json::parse(replay.out);
  // (The CSV keeps durations to 0.1 us, so the replayed clock may differ by that much.)
  for (const char* key : {"ttft_ms", "tpot_ms", "e2e_ms"}) {
    for (const char* stat : {"p50", "p99", "mean"}) {
      EXPECT_NEAR(a[key][stat].get<double>(), b[key][stat].get<double>(), 1e-2) << key << stat;
    }
  }
  EXPECT_EQ(a["completed"], b["completed"]);
  EXPECT_EQ(b["executor"], "replay");
  // The same iterations; the cost model prices each at what the simulation said it took.
  const auto m = csv_rows(measured), r = csv_rows(replayed);
  ASSERT_EQ(m.size(), r.size());
  ASSERT_GT(m.size(), 10u);
  for (size_t i = 1; i < m.size(); ++i) {
    EXPECT_EQ(r[i][1], m[i][1]) << i;                                 // duration_ms
    EXPECT_EQ(r[i][2], m[i][2]) << i;                                 // prefill_tokens
    EXPECT_NEAR(std::stod(r[i][11]), std::stod(m[i][1]), 1e-3) << i;  // simulated_ms: the price
  }
  // Another seed forms other iterations: refused, naming where the replay left the run.
  std::string other_flags = flags;
  other_flags.replace(other_flags.find("--seed 4"), 8, "--seed 5");
  auto other =
      run_inferlab(other_flags + " --executor replay --replay-iterations " + measured.string());
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("differ from the measured run"), std::string::npos) << other.err;
  std::ofstream(dir / "bad.csv") << "start_s,duration_ms\n0,1\n";
  testing::expect_refused({
      flags + " --executor replay",                         // no file
      flags + " --replay-iterations " + measured.string(),  // no replay executor
      flags + " --executor replay --replay-iterations /nonexistent.csv",
      flags + " --executor replay --replay-iterations " + (dir / "bad.csv").string(),
      flags + " --executor replay --speculative draft=ngram,k=2,accept=0.5 --replay-iterations " +
          measured.string(),
  });
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace inferlab
