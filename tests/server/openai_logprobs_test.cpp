// Logprobs, echo and n > 1 over HTTP on the CPU reference (a tiny Llama with the real Llama 3
// tokenizer): the echoed prompt's logprobs and the generated tokens' are the log-softmax of the
// model's teacher-forced rows (worked out apart here), top logprobs are the k most likely in
// order, max_tokens 0 with echo scores the prompt alone, n choices are independent samples,
// chat has its own format, streams carry the same logprobs, and bad input is a 400.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "engine/generate.hpp"
#include "engine/logprobs.hpp"
#include "engine/teacher_forced.hpp"
#include "engine/tokenizer/utf8.hpp"
#include "server/logprobs_json.hpp"
#include "server_test_support.hpp"
#include "skip_without_tokenizer.hpp"

namespace inferlab::server {
namespace {

using nlohmann::json;
using testing::post;
using testing::post_stream;
using testing::Streamed;
using testing::TestServer;

constexpr int64_t kVocab = 128256;

// Row r of the answer: log_softmax of the teacher-forced logits at position r of `ids`, on a
// fresh backend with the server's weights.
std::vector<std::vector<float>> reference_logprobs(const std::vector<int32_t>& ids) {
  auto backend = testing::tiny_backend();
  engine::BlockTable table;
  for (int32_t b = 0; b < 64; ++b) table.push_back(b);
  const auto count = static_cast<int64_t>(ids.size());
  const std::vector<float> logits = engine::teacher_forced_logits(*backend, ids, count, table);
  std::vector<std::vector<float>> rows;
  for (int64_t r = 0; r < count; ++r) {
    const std::span<const float> row(logits.data() + r * kVocab, static_cast<size_t>(kVocab));
    std::vector<float> lp(static_cast<size_t>(kVocab));
    engine::log_softmax(row, lp);
    rows.push_back(std::move(lp));
  }
  return rows;
}

// The greedy tokens generate() gives after `prompt` (the reference's continuation).
std::vector<int32_t> greedy_tokens(const std::vector<int32_t>& prompt, int64_t tokens) {
  auto backend = testing::tiny_backend();
  engine::GenerateOptions options;
  options.max_new_tokens = tokens;
  return engine::generate(*backend, prompt, options).tokens;
}

// The byte where character `chars` of UTF-8 text starts.
size_t byte_offset(const std::string& text, int64_t chars) {
  size_t at = 0;
  for (; at < text.size(); ++at) {
    const bool starts = (static_cast<unsigned char>(text[at]) & 0xC0) != 0x80;
    if (starts && chars-- == 0) break;
  }
  return at;
}

json completion(const json& prompt, int64_t max_tokens) {
  return {{"model", "tiny"},
          {"prompt", prompt},
          {"max_tokens", max_tokens},
          {"temperature", 0},
          {"ignore_eos", true}};
}

// One position's top_logprobs dict: k entries, each the reference's value for its token.
void expect_top(const json& top, const std::vector<float>& ref, const engine::Tokenizer& tok,
                size_t k, const std::string& where) {
  ASSERT_TRUE(top.is_object()) << where;
  ASSERT_EQ(top.size(), k) << where;
  std::vector<float> sorted = ref;
  std::partial_sort(sorted.begin(), sorted.begin() + static_cast<ptrdiff_t>(k), sorted.end(),
                    std::greater<>());
  std::vector<double> values;
  for (auto& [text, value] : top.items()) {
    const auto id = tok.token_id(text);
    if (id) {
      EXPECT_NEAR(value.get<double>(), ref[static_cast<size_t>(*id)], 2e-5) << where;
    }
    values.push_back(value.get<double>());
  }
  std::sort(values.begin(), values.end(), std::greater<>());
  for (size_t i = 0; i < k; ++i) EXPECT_NEAR(values[i], sorted[i], 2e-5) << where;
}

TEST(OpenAiLogprobs, EchoedPromptAndCompletionAreLogSoftmaxOfTheModelsRows) {
  SKIP_WITHOUT_TOKENIZER();
  TestServer server;
  const auto& tok = server.tokenizer();
  const std::string prompt = "The tallest mountain is";
  json body = completion(prompt, 5);
  body["logprobs"] = 4;
  body["echo"] = true;
  const json answer = post(server, "/v1/completions", body);
  const json& choice = answer["choices"][0];
  std::vector<int32_t> ids = tok.encode(prompt, true);
  const size_t p = ids.size();
  const std::vector<int32_t> generated = greedy_tokens(ids, 5);
  ids.insert(ids.end(), generated.begin(), generated.end());
  const auto ref = reference_logprobs(ids);

  const std::string generated_text = echo_text(tok, generated);
  EXPECT_EQ(choice["text"], prompt + generated_text);
  const json& lp = choice["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), ids.size());
  ASSERT_EQ(lp["token_logprobs"].size(), ids.size());
  ASSERT_EQ(lp["top_logprobs"].size(), ids.size());
  ASSERT_EQ(lp["text_offset"].size(), ids.size());
  // The first prompt token has no logprob.
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  const std::string text = choice["text"];
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string where = "token " + std::to_string(i);
    EXPECT_EQ(lp["tokens"][i], logprob_token_text(tok, ids[i])) << where;
    // The offset (in characters) is where the token's text stands; the BOS adds none.
    const std::string piece = tok.is_special(ids[i]) ? "" : tok.token_bytes(ids[i]);
    const size_t at = byte_offset(text, lp["text_offset"][i].get<int64_t>());
    if (engine::is_valid_utf8(piece)) {
      EXPECT_EQ(text.substr(at, piece.size()), piece) << where;
    }
    if (i == 0) continue;
    EXPECT_NEAR(lp["token_logprobs"][i].get<double>(), ref[i - 1][static_cast<size_t>(ids[i])],
                2e-5)
        << where;
    expect_top(lp["top_logprobs"][i], ref[i - 1], tok, 4, where);
    // The greedy tokens: the most likely, their logprob the top's largest exactly.
    if (i >= p) {
      double best = -1e30;
      for (auto& [t, v] : lp["top_logprobs"][i].items()) best = std::max(best, v.get<double>());
      EXPECT_EQ(lp["token_logprobs"][i].get<double>(), best) << where;
      EXPECT_TRUE(lp["top_logprobs"][i].contains(lp["tokens"][i].get<std::string>())) << where;
    }
  }
  // The top_logprobs dicts come most likely first (read keeping the order the server wrote).
  auto client = server.client();
  const auto raw = client.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(raw);
  const auto ordered = nlohmann::ordered_json::parse(raw->body);
  for (const auto& top : ordered["choices"][0]["logprobs"]["top_logprobs"]) {
    double previous = 0;
    for (const auto& [t, v] : top.items()) {
      EXPECT_LE(v.get<double>(), previous) << t;
      previous = v.get<double>();
    }
  }
  // Without echo: the same generated tokens' logprobs, offsets from the completion's start.
  body["echo"] = false;
  const json plain = post(server, "/v1/completions", body)["choices"][0];
  EXPECT_EQ(plain["text"], generated_text);
  ASSERT_EQ(plain["logprobs"]["tokens"].size(), generated.size());
  EXPECT_EQ(plain["logprobs"]["text_offset"][0], 0);
  for (size_t k = 0; k < generated.size(); ++k) {
    EXPECT_EQ(plain["logprobs"]["token_logprobs"][k], lp["token_logprobs"][p + k]) << k;
    EXPECT_EQ(plain["logprobs"]["top_logprobs"][k], lp["top_logprobs"][p + k]) << k;
  }
  // logprobs 0: the sampled token's logprob alone, empty top dicts.
  body["logprobs"] = 0;
  const json zero = post(server, "/v1/completions", body)["choices"][0]["logprobs"];
  EXPECT_EQ(zero["token_logprobs"], plain["logprobs"]["token_logprobs"]);
  EXPECT_EQ(zero["top_logprobs"][0], json::object());
  // Without logprobs: null, as OpenAI.
  EXPECT_TRUE(
      post(server, "/v1/completions", completion(prompt, 2))["choices"][0]["logprobs"].is_null());
}

TEST(OpenAiLogprobs, MaxTokensZeroWithEchoScoresThePromptOnly) {
  SKIP_WITHOUT_TOKENIZER();
  TestServer server;
  const auto& tok = server.tokenizer();
  // lm-evaluation-harness's loglikelihood requests: token-id prompts, several in one request.
  const std::vector<int32_t> a = tok.encode("Paris is the capital of France", true);
  const std::vector<int32_t> b = tok.encode("1, 2, 3, 4", true);
  json body = completion(json::array({a, b}), 0);
  body["logprobs"] = 1;
  body["echo"] = true;
  const json answer = post(server, "/v1/completions", body);
  ASSERT_EQ(answer["choices"].size(), 2u);
  EXPECT_EQ(answer["usage"]["prompt_tokens"], a.size() + b.size());
  EXPECT_EQ(answer["usage"]["completion_tokens"], 0);
  for (size_t c = 0; c < 2; ++c) {
    const json& choice = answer["choices"][c];
    const std::vector<int32_t>& ids = c == 0 ? a : b;
    EXPECT_EQ(choice["index"], c);
    EXPECT_EQ(choice["text"], echo_text(tok, ids));
    EXPECT_EQ(choice["finish_reason"], "length");
    const json& lp = choice["logprobs"];
    ASSERT_EQ(lp["token_logprobs"].size(), ids.size());
    const auto ref = reference_logprobs(ids);
    EXPECT_TRUE(lp["token_logprobs"][0].is_null());
    for (size_t i = 1; i < ids.size(); ++i) {
      EXPECT_NEAR(lp["token_logprobs"][i].get<double>(), ref[i - 1][static_cast<size_t>(ids[i])],
                  2e-5)
          << i;
      EXPECT_EQ(lp["top_logprobs"][i].size(), 1u);
    }
  }
  // echo without logprobs: the prompt's text, logprobs null.
  body.erase("logprobs");
  const json text_only = post(server, "/v1/completions", body);
  EXPECT_EQ(text_only["choices"][1]["text"], echo_text(tok, b));
  EXPECT_TRUE(text_only["choices"][1]["logprobs"].is_null());
}

TEST(OpenAiLogprobs, NChoicesAreIndependentSamples) {
  SKIP_WITHOUT_TOKENIZER();
  TestServer server;
  json body = completion("Once upon a time", 6);
  body["n"] = 3;
  const json greedy = post(server, "/v1/completions", body);
  ASSERT_EQ(greedy["choices"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(greedy["choices"][i]["index"], i);
    EXPECT_EQ(greedy["choices"][i]["text"], greedy["choices"][0]["text"]);
  }
  EXPECT_EQ(greedy["usage"]["completion_tokens"], 18);
  EXPECT_EQ(greedy["usage"]["prompt_tokens"],
            server.tokenizer().encode("Once upon a time", true).size());
  body["temperature"] = 1.0;
  body["seed"] = 42;
  body["logprobs"] = 2;
  const json sampled = post(server, "/v1/completions", body);
  ASSERT_EQ(sampled["choices"].size(), 3u);
  std::set<std::string> texts;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(sampled["choices"][i]["index"], i);
    EXPECT_EQ(sampled["choices"][i]["logprobs"]["tokens"].size(), 6u);
    texts.insert(sampled["choices"][i]["text"].get<std::string>());
  }
  EXPECT_GT(texts.size(), 1u);  // three draws over 128k tokens
  // The same seed, the same three choices.
  EXPECT_EQ(post(server, "/v1/completions", body)["choices"], sampled["choices"]);
}

TEST(OpenAiLogprobs, ChatLogprobsHaveTheChatShape) {
  SKIP_WITHOUT_TOKENIZER();
  TestServer server;
  json body = {{"model", "tiny"},    {"messages", {{{"role", "user"}, {"content", "Hi"}}}},
               {"max_tokens", 4},    {"temperature", 0},
               {"ignore_eos", true}, {"logprobs", true},
               {"top_logprobs", 3}};
  const json answer = post(server, "/v1/chat/completions", body);
  const json& content = answer["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 4u);
  std::string text;
  for (const json& entry : content) {
    ASSERT_TRUE(entry["token"].is_string());
    ASSERT_TRUE(entry["logprob"].is_number());
    ASSERT_TRUE(entry["bytes"].is_array());
    std::string bytes;
    for (const json& b : entry["bytes"]) bytes.push_back(static_cast<char>(b.get<int>()));
    text += bytes;
    ASSERT_EQ(entry["top_logprobs"].size(), 3u);
    EXPECT_EQ(entry["top_logprobs"][0]["token"], entry["token"]);  // greedy
    EXPECT_EQ(entry["top_logprobs"][0]["logprob"], entry["logprob"]);
    for (const json& top : entry["top_logprobs"]) {
      EXPECT_TRUE(top.contains("bytes"));
      EXPECT_LE(top["logprob"].get<double>(), 0.0);
    }
  }
  EXPECT_EQ(answer["choices"][0]["message"]["content"], text);
  // top_logprobs 0: the token's own logprob, an empty list.
  body["top_logprobs"] = 0;
  const json bare = post(server, "/v1/chat/completions", body)["choices"][0]["logprobs"];
  EXPECT_EQ(bare["content"][0]["top_logprobs"], json::array());
  EXPECT_EQ(bare["content"][0]["logprob"], content[0]["logprob"]);
  body.erase("logprobs");
  body.erase("top_logprobs");
  EXPECT_TRUE(post(server, "/v1/chat/completions", body)["choices"][0]["logprobs"].is_null());
}

// The logprobs of a stream's chunks, choice by choice, each list concatenated.
std::map<int, json> streamed_logprobs(const Streamed& s, std::map<int, std::string>* texts) {
  std::map<int, json> out;
  for (const json& chunk : s.chunks) {
    for (const json& c : chunk["choices"]) {
      const int i = c["index"];
      if (texts) (*texts)[i] += c.contains("text") ? c["text"].get<std::string>() : "";
      if (c["logprobs"].is_null()) continue;
      for (auto& [key, list] : c["logprobs"].items()) {
        for (const json& e : list) out[i][key].push_back(e);
      }
    }
  }
  return out;
}

TEST(OpenAiLogprobs, StreamsCarryTheSameLogprobs) {
  SKIP_WITHOUT_TOKENIZER();
  TestServer server;
  json body = completion("Hello there", 6);
  body["logprobs"] = 2;
  body["echo"] = true;
  body["n"] = 2;
  const json whole = post(server, "/v1/completions", body);
  body["stream"] = true;
  const Streamed s = post_stream(server, "/v1/completions", body);
  ASSERT_TRUE(s.done);
  std::map<int, std::string> texts;
  const auto streamed = streamed_logprobs(s, &texts);
  ASSERT_EQ(streamed.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(texts[i], whole["choices"][i]["text"]) << i;
    EXPECT_EQ(streamed.at(i), whole["choices"][i]["logprobs"]) << i;
  }
  json chat = {{"model", "tiny"},    {"messages", {{{"role", "user"}, {"content", "Hi"}}}},
               {"max_tokens", 5},    {"temperature", 0},
               {"ignore_eos", true}, {"logprobs", true},
               {"top_logprobs", 2}};
  const json chat_whole = post(server, "/v1/chat/completions", chat);
  chat["stream"] = true;
  const Streamed cs = post_stream(server, "/v1/chat/completions", chat);
  ASSERT_TRUE(cs.done);
  EXPECT_EQ(streamed_logprobs(cs, nullptr).at(0), chat_whole["choices"][0]["logprobs"]);
}

TEST(OpenAiLogprobs, EchoSkipsThePrefixCacheAndScoresTheWholePrompt) {
  SKIP_WITHOUT_TOKENIZER();
  testing::ServerSetup setup;
  setup.prefix_caching = true;
  TestServer server(setup);
  std::vector<int> prompt(60);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int>(2000 + 11 * i);
  json body = completion(prompt, 0);
  body["echo"] = true;
  body["logprobs"] = 1;
  const json first = post(server, "/v1/completions", body);
  const json second = post(server, "/v1/completions", body);
  EXPECT_EQ(first["choices"], second["choices"]);
  EXPECT_EQ(second["choices"][0]["logprobs"]["token_logprobs"].size(), prompt.size());
  EXPECT_EQ(server.metrics().gauges().prefix_hit_tokens, 0);
  // A request without echo still uses (and fills) the cache.
  post(server, "/v1/completions", completion(prompt, 2));
  post(server, "/v1/completions", completion(prompt, 2));
  EXPECT_EQ(server.metrics().gauges().prefix_hit_tokens, 48);
}

TEST(OpenAiLogprobs, BadLogprobsRequestsAreJson400s) {
  SKIP_WITHOUT_TOKENIZER();
  TestServer server;
  const auto refused = [&](const std::string& path, json body, const std::string& param,
                           const std::string& part) {
    body["model"] = "tiny";
    int status = 0;
    const json error = post(server, path, body, &status);
    EXPECT_EQ(status, 400) << body.dump();
    EXPECT_EQ(error["error"]["type"], "invalid_request_error") << body.dump();
    EXPECT_EQ(error["error"]["param"], param) << body.dump();
    EXPECT_NE(error["error"]["message"].get<std::string>().find(part), std::string::npos)
        << error.dump();
  };
  const std::string c = "/v1/completions", chat = "/v1/chat/completions";
  const json messages = {{{"role", "user"}, {"content", "Hi"}}};
  refused(c, {{"prompt", "x"}, {"logprobs", 21}}, "logprobs", "between 0 and 20");
  refused(c, {{"prompt", "x"}, {"logprobs", -1}}, "logprobs", "between 0 and 20");
  refused(c, {{"prompt", "x"}, {"top_logprobs", 3}}, "top_logprobs", "chat field");
  refused(c, {{"prompt", "x"}, {"max_tokens", 0}}, "max_tokens", "'echo': true");
  refused(c, {{"prompt", "x"}, {"n", 0}}, "n", "between 1 and 128");
  // More choices than the server runs and queues (8 + 64): never possible, so not a 429.
  refused(c, {{"prompt", "x"}, {"n", 100}}, "n", "at most 72");
  refused(c, {{"prompt", "x"}, {"prompt_logprobs", 2}}, "prompt_logprobs", "not supported");
  refused(chat, {{"messages", messages}, {"top_logprobs", 2}}, "top_logprobs", "'logprobs': true");
  refused(chat, {{"messages", messages}, {"logprobs", true}, {"top_logprobs", 21}}, "top_logprobs",
          "between 0 and 20");
  refused(chat, {{"messages", messages}, {"echo", true}}, "echo", "not supported");
  refused(chat, {{"messages", messages}, {"max_tokens", 0}}, "max_tokens", "echo");
}

}  // namespace
}  // namespace inferlab::server
