// `generate --speculative` and `bench --speculative` end to end on the CPU reference: greedy
// output is the same with n-gram or draft-model speculation, a draft with the target's weights
// is always accepted, the cost table has its fields, bad specs are exit 2.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace inferlab {
namespace {

using testing::run_inferlab;

struct Checkpoint {
  std::filesystem::path dir, ckpt;
  Checkpoint() {
    dir = std::filesystem::temp_directory_path() /
          ("inferlab_speculative_cli_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "tiny.json") << testing::tiny_llama_config(128256, 256).dump();
    ckpt = dir / "ckpt";
  }
  ~Checkpoint() { std::filesystem::remove_all(dir); }
};

nlohmann::json generate(const Checkpoint& c, const std::string& extra) {
  auto r = run_inferlab("generate --model " + c.ckpt.string() +
                        " --prompt 'one two three one two three one two' --max-tokens 24 "
                        "--temperature 0 --device cpu --format json " +
                        extra);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

TEST(SpeculativeCli, GreedyTokensAreTheSameWithAndWithoutSpeculationAndBenchTimesIt) {
  if (!testing::have_llama3_tokenizer()) GTEST_SKIP() << "Llama 3 tokenizer not fetched";
  Checkpoint c;
  auto init = run_inferlab("init-weights --model " + (c.dir / "tiny.json").string() + " --out " +
                           c.ckpt.string() + " --seed 5");
  ASSERT_EQ(init.exit_code, 0) << init.err;
  const auto plain = generate(c, "");
  const auto ngram = generate(c, "--speculative ngram,k=3");
  const auto drafted = generate(c, "--speculative draft=" + c.ckpt.string() + ",k=2");
  EXPECT_EQ(ngram["tokens"], plain["tokens"]);
  EXPECT_EQ(drafted["tokens"], plain["tokens"]);
  EXPECT_FALSE(plain.contains("speculative"));
  EXPECT_EQ(ngram["speculative"]["drafter"], "ngram");
  // The draft is the target itself: every proposal is kept.
  const auto& s = drafted["speculative"];
  EXPECT_EQ(s["accepted"], s["proposed"]);
  EXPECT_DOUBLE_EQ(s["acceptance"].get<double>(), 1.0);
  EXPECT_GT(s["draft_passes"].get<int64_t>(), 0);

  // bench --speculative: a decode step, the verification of k + 1 tokens and a draft step.

  auto r = run_inferlab("bench --model " + c.ckpt.string() + " --device cpu --speculative draft=" +
                        c.ckpt.string() + ",k=2 --input 8 --repeats 2 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["drafter"], "model");
  EXPECT_EQ(j["k"], 2);
  EXPECT_EQ(j["context_tokens"], 8);
  EXPECT_EQ(j["decode_step"]["samples"], 2);
  EXPECT_GT(j["verify"]["median_ms"].get<double>(), 0.0);
  EXPECT_EQ(j["host_wall"]["verify"]["median_ms"], j["verify"]["median_ms"]);  // no device timer
  EXPECT_EQ(j["host_wall"]["draft_step"]["samples"], 2);
  EXPECT_EQ(j["rounds"]["round_wall"]["samples"], 2);  // with a draft model: whole rounds too
  EXPECT_EQ(j["speedup_at_acceptance"].size(), 6u);
}

TEST(SpeculativeCli, BadSpecsAreRefused) {
  testing::expect_refused({
      "generate --model llama-3.2-1b --prompt hi --device cpu --speculative eagle,k=2",
      "generate --model llama-3.2-1b --prompt hi --device cpu --speculative ngram,k=0",
      "generate --model llama-3.2-1b --prompt hi --device cpu --speculative draft=,k=2",
      "generate --model llama-3.2-1b --prompt hi --device cpu --speculative draft=no-such,k=2",
      "bench --model llama-3.2-1b --device cpu --speculative ngram,k=2 --batch 2",
  });
}

}  // namespace
}  // namespace inferlab
