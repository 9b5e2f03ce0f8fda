// Logprobs in the OpenAI formats: token texts (a token holding part of a character as
// "bytes:\xNN"), text offsets in characters across a character split between tokens, the chat
// format's bytes, and -inf as -9999.
#include "server/logprobs_json.hpp"

#include <gtest/gtest.h>

#include <limits>

#include "test_support.hpp"
#include "util/data_dir.hpp"

namespace inferlab::server {
namespace {

using json = ResponseJson;  // what the builders return

class LogprobsJson : public ::testing::Test {
 protected:
  // Read once for the suite (most of a test's time).
  static void SetUpTestSuite() {
    if (inferlab::testing::have_llama3_tokenizer()) {
      tok_ = std::make_unique<engine::Tokenizer>(
          engine::Tokenizer::from_file(fetched_tokenizer_dir("llama3") / "tokenizer.json"));
    }
  }
  static void TearDownTestSuite() { tok_.reset(); }
  void SetUp() override {
    if (!tok_) GTEST_SKIP() << "Llama 3 tokenizer not fetched (scripts/fetch-tokenizer.sh)";
  }
  // The one token of text that is a single token (a lone byte of a character included).
  int32_t one(const std::string& text) const {
    const auto ids = tok_->encode(text);
    EXPECT_EQ(ids.size(), 1u) << text;
    return ids.front();
  }
  static inline std::unique_ptr<engine::Tokenizer> tok_;
};

engine::PositionLogprobs scored(int32_t token, float logprob) {
  return {{token, logprob}, {{token, logprob}}};
}

TEST_F(LogprobsJson, TokenTextsOfPartialCharactersAreBytes) {
  EXPECT_EQ(logprob_token_text(*tok_, one(" world")), " world");
  EXPECT_EQ(logprob_token_text(*tok_, one("\xE6")), "bytes:\\xe6");
  EXPECT_EQ(logprob_token_text(*tok_, *tok_->bos_id()), "<|begin_of_text|>");
  EXPECT_EQ(json_logprob(-std::numeric_limits<float>::infinity()), -9999.0);
  EXPECT_EQ(json_logprob(-1e6f), -9999.0);
  EXPECT_FLOAT_EQ(static_cast<float>(json_logprob(-0.25f)), -0.25f);
}

TEST_F(LogprobsJson, TextOffsetsCountCharactersOfTheReturnedText) {
  // "日" (E6 97 A5) one byte token at a time, after the BOS, then "a"; then generated " b".
  const std::vector<int32_t> prompt = {*tok_->bos_id(), one("\xE6"), one("\x97"), one("\xA5"),
                                       one("a")};
  EXPECT_EQ(echo_text(*tok_, prompt), "日a");
  CompletionLogprobs lp(*tok_);
  std::vector<engine::PositionLogprobs> scores;
  for (size_t p = 1; p < prompt.size(); ++p) scores.push_back(scored(prompt[p], -1.0f * p));
  lp.add_prompt(prompt, scores);
  lp.add(one(" b"), scored(one(" b"), -0.5f));
  const json out = lp.take();
  EXPECT_EQ(out["tokens"],
            json({"<|begin_of_text|>", "bytes:\\xe6", "bytes:\\x97", "bytes:\\xa5", "a", " b"}));
  EXPECT_EQ(out["text_offset"], json({0, 0, 0, 0, 1, 2}));
  EXPECT_EQ(out["token_logprobs"], json({nullptr, -1.0, -2.0, -3.0, -4.0, -0.5}));
  EXPECT_TRUE(out["top_logprobs"][0].is_null());
  EXPECT_EQ(out["top_logprobs"][5], json({{" b", -0.5}}));
  // Taken: the next piece starts empty and its offsets go on.
  EXPECT_TRUE(lp.empty());
  lp.add(one("c"), scored(one("c"), -0.1f));
  EXPECT_EQ(lp.take()["text_offset"], json({4}));
}

TEST_F(LogprobsJson, ChatEntriesCarryTheRawBytes) {
  const int32_t byte = one("\xE6");
  const json entry = chat_logprob_json(*tok_, {{byte, -0.5f}, {{byte, -0.5f}, {one("a"), -2.0f}}});
  EXPECT_EQ(entry["token"], "bytes:\\xe6");
  EXPECT_EQ(entry["bytes"], json({0xE6}));
  EXPECT_EQ(entry["logprob"], -0.5);
  ASSERT_EQ(entry["top_logprobs"].size(), 2u);
  EXPECT_EQ(entry["top_logprobs"][1], json({{"token", "a"}, {"logprob", -2.0}, {"bytes", {97}}}));
}

}  // namespace
}  // namespace inferlab::server
