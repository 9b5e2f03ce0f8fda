// `inferlab perplexity` on the CPU reference with a tiny checkpoint: equal to exp(mean NLL) of the
// engine's own teacher-forced logits (`inferlab logits`), window by window, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "npy_file.hpp"
#include "test_support.hpp"
#include "tiny_checkpoint.hpp"

namespace inferlab {
namespace {

using testing::read_npy;
using testing::run_inferlab;
using testing::TinyCheckpoint;

std::vector<int32_t> some_ids(int64_t count) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < count; ++i) ids.push_back(static_cast<int32_t>((i * 37 + 11) % 300));
  return ids;
}

void write_ids(const std::filesystem::path& path, const std::vector<int32_t>& ids) {
  std::ofstream(path) << nlohmann::json(ids).dump();
}

// Σ −log softmax(logits of position p − 1)[ids[p]] over p in [first, end) of one window starting
// at `begin`, from `inferlab logits` of that window's ids.
double window_nll_sum(const TinyCheckpoint& tiny, const std::vector<int32_t>& ids, int64_t begin,
                      int64_t end, int64_t first) {
  const std::vector<int32_t> window(ids.begin() + begin, ids.begin() + end);
  write_ids(tiny.dir / "window.json", window);
  const auto r = run_inferlab("logits --model " + tiny.ckpt.string() + " --device cpu --tokens " +
                              (tiny.dir / "window.json").string() + " --out " +
                              (tiny.dir / "window.npy").string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  int64_t rows = 0, cols = 0;
  const std::vector<float> logits = read_npy(tiny.dir / "window.npy", rows, cols);
  EXPECT_EQ(rows, end - begin);
  double sum = 0;
  for (int64_t p = first; p < end; ++p) {
    const float* row = logits.data() + (p - begin - 1) * cols;
    double top = row[0], total = 0;
    for (int64_t v = 0; v < cols; ++v) top = std::max<double>(top, row[v]);
    for (int64_t v = 0; v < cols; ++v) total += std::exp(row[v] - top);
    sum += top + std::log(total) - row[ids[static_cast<size_t>(p)]];
  }
  return sum;
}

nlohmann::json perplexity(const TinyCheckpoint& tiny, const std::string& flags) {
  const auto r =
      run_inferlab("perplexity --model " + tiny.ckpt.string() + " --device cpu --tokens " +
                   (tiny.dir / "ids.json").string() + " --format json " + flags);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

TEST(PerplexityCli, OneWindowIsExpOfTheLogitsMeanNll) {
  REQUIRE_TOKENIZER();
  TinyCheckpoint tiny{"perplexity_one", 64};
  const std::vector<int32_t> ids = some_ids(20);
  write_ids(tiny.dir / "ids.json", ids);
  const nlohmann::json j = perplexity(tiny, "--context 20");
  EXPECT_EQ(j["tokens"], 19);  // every token but the first
  EXPECT_EQ(j["windows"], 1);
  const double nll = window_nll_sum(tiny, ids, 0, 20, 1) / 19;
  EXPECT_NEAR(j["nll_mean"].get<double>(), nll, 1e-9 * nll);
  EXPECT_NEAR(j["perplexity"].get<double>(), std::exp(nll), 1e-9 * std::exp(nll));
  // Random weights over 300 tokens: near the uniform distribution's 300, never below 1.
  EXPECT_GT(j["perplexity"].get<double>(), 100.0);
}

// 40 tokens, windows of 16 every 8: [0, 16) scores 1-15, [8, 24) 16-23, [16, 32) 24-31 and
// [24, 40) 32-39 (worked out by hand): 39 tokens in 4 windows.
TEST(PerplexityCli, SlidingWindowsScoreEachTokenOnceWithItsWindowsContext) {
  REQUIRE_TOKENIZER();
  TinyCheckpoint tiny{"perplexity_slide", 64};
  const std::vector<int32_t> ids = some_ids(40);
  write_ids(tiny.dir / "ids.json", ids);
  const nlohmann::json j = perplexity(tiny, "--context 16 --stride 8");
  EXPECT_EQ(j["tokens"], 39);
  EXPECT_EQ(j["windows"], 4);
  EXPECT_EQ(j["context"], 16);
  EXPECT_EQ(j["stride"], 8);
  const double nll =
      (window_nll_sum(tiny, ids, 0, 16, 1) + window_nll_sum(tiny, ids, 8, 24, 16) +
       window_nll_sum(tiny, ids, 16, 32, 24) + window_nll_sum(tiny, ids, 24, 40, 32)) /
      39;
  EXPECT_NEAR(j["nll_mean"].get<double>(), nll, 1e-9 * nll);
  // A shorter window sees less context: another figure than one window over all 40 tokens.
  write_ids(tiny.dir / "ids.json", ids);
  const nlohmann::json whole = perplexity(tiny, "--context 40");
  EXPECT_EQ(whole["windows"], 1);
  EXPECT_NE(whole["nll_mean"].get<double>(), j["nll_mean"].get<double>());
}

TEST(PerplexityCli, BadInputIsRefused) {
  REQUIRE_TOKENIZER();
  TinyCheckpoint tiny{"perplexity_bad", 64};
  write_ids(tiny.dir / "ids.json", some_ids(30));
  write_ids(tiny.dir / "one.json", {5});
  write_ids(tiny.dir / "outside.json", {5, 300});
  std::ofstream(tiny.dir / "empty.txt") << "";
  std::ofstream(tiny.dir / "text.txt") << "Hello, world. A text whose ids are past 300.";
  const std::string m = "perplexity --model " + tiny.ckpt.string() + " --device cpu";
  const std::string ids = " --tokens " + (tiny.dir / "ids.json").string();
  testing::expect_refused({
      m,                                                        // no text
      m + ids + " --text " + (tiny.dir / "text.txt").string(),  // both
      m + " --text /nonexistent.txt",                           // missing file
      m + " --text " + (tiny.dir / "empty.txt").string(),       // empty text
      m + " --text " + (tiny.dir / "text.txt").string(),        // ids past the vocab
      m + " --tokens " + (tiny.dir / "one.json").string(),      // nothing to predict
      m + " --tokens " + (tiny.dir / "outside.json").string(),  // id 300 of 300
      m + ids + " --context 65",                                // past the context
      m + ids + " --context 1",                                 //
      m + ids + " --context 16 --stride 17",                    // tokens left unscored
      m + ids + " --stride -3",                                 //
      "perplexity --model no-such-model" + ids,                 // unknown model
  });
}

}  // namespace
}  // namespace inferlab
