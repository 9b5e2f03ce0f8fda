// The same inputs give byte-identical output: predict, sweep, simulate, serve (seeded),
// explore, and generate on the CPU path (seeded sampling and random weights), each run twice in
// separate processes, JSON compared byte for byte. Nothing may depend on addresses, hash order,
// thread timing or the clock — except generate's timing fields, which are dropped before the
// comparison.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.hpp"

namespace inferlab {
namespace {

using testing::run_inferlab;

void expect_identical_runs(const std::string& args) {
  auto first = run_inferlab(args + " --format json");
  auto second = run_inferlab(args + " --format json");
  ASSERT_EQ(first.exit_code, 0) << args << "\n" << first.err;
  ASSERT_EQ(second.exit_code, 0) << args << "\n" << second.err;
  ASSERT_FALSE(first.out.empty()) << args;
  EXPECT_EQ(first.out, second.out) << args;
}

TEST(Determinism, PredictionsAndSimulationsAreByteIdentical) {
  expect_identical_runs("predict --model llama-3-8b --hardware h100-sxm --batch 8 --input 1024");
  expect_identical_runs("sweep --model llama-3.2-1b --batch 1,8 --input 128,512 --output 32");
  expect_identical_runs(
      "simulate --model llama-3.2-1b --hardware h100-sxm --phase prefill "
      "--tokens 512");
  expect_identical_runs("serve --model llama-3.2-1b --rate 5 --requests 50 --seed 7");
  expect_identical_runs(
      "explore --template h100-sxm --vary cores=66,132 --model llama-3.2-1b "
      "--workload decode:context=512,batch=8");
}

TEST(Determinism, SeededGenerationOnTheCpuIsIdentical) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("inferlab_determinism_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  // The Llama 3 tokenizer's ids fit its vocabulary.
  const nlohmann::json config = testing::tiny_llama_config(128256, 128);
  std::ofstream(dir / "tiny.json") << config.dump();
  // Random weights made in memory from the config (no checkpoint), sampled with a seed; the
  // tokenizer is only needed for the prompt: ids in, ids out.
  std::ofstream(dir / "ids.json") << "[1, 2, 3, 250, 7]";
  const std::string logits = "logits --model " + (dir / "tiny.json").string() +
                             " --device cpu --seed 4 --tokens " + (dir / "ids.json").string();
  auto a = run_inferlab(logits + " --out " + (dir / "a.npy").string());
  auto b = run_inferlab(logits + " --out " + (dir / "b.npy").string());
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  auto bytes = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };
  EXPECT_EQ(bytes(dir / "a.npy"), bytes(dir / "b.npy"));

  const std::string generate = "generate --model " + (dir / "tiny.json").string() +
                               " --device cpu --prompt 'Hello there' --max-tokens 8 "
                               "--temperature 0.9 --top-p 0.95 --seed 11 --format json";
  auto g1 = run_inferlab(generate), g2 = run_inferlab(generate);
  if (g1.exit_code != 0 && g1.err.find("tokenizer") != std::string::npos) {
    std::filesystem::remove_all(dir);
    GTEST_SKIP() << "Llama 3 tokenizer not fetched";
  }
  ASSERT_EQ(g1.exit_code, 0) << g1.err;
  ASSERT_EQ(g2.exit_code, 0) << g2.err;
  auto j1 = nlohmann::json::parse(g1.out), j2 = nlohmann::json::parse(g2.out);
  for (const char* timing : {"ttft_ms", "tpot_ms", "e2e_ms", "decode_tokens_per_s"}) {
    j1.erase(timing);
    j2.erase(timing);
  }
  EXPECT_EQ(j1.dump(), j2.dump());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace inferlab
