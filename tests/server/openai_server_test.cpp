// The OpenAI-compatible server end to end on the CPU reference (a tiny Llama with the real
// Llama 3 tokenizer): its answers are generate()'s, alone or batched; streams end in [DONE];
// every refusal is a JSON error with the right status; a client that goes away frees its blocks.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>

#include "engine/generate.hpp"
#include "engine/tokenizer/utf8.hpp"
#include "server/sse.hpp"
#include "server_test_support.hpp"
#include "skip_without_tokenizer.hpp"

namespace inferlab::server {
namespace {

using nlohmann::json;
using testing::greedy;
using testing::post;
using testing::post_stream;
using testing::Streamed;
using testing::TestServer;

// What generate() gives for `prompt` alone on the same weights: the reference.
std::string reference_text(const TestServer& server, const std::string& prompt, int64_t tokens) {
  auto backend = testing::tiny_backend();
  const auto ids = server.tokenizer().encode(prompt, true);
  engine::GenerateOptions options;
  options.max_new_tokens = tokens;
  const auto result = engine::generate(*backend, ids, options);
  return engine::utf8_lossy(server.tokenizer().decode(result.tokens, true));
}

// Greedy completions of `tokens` tokens for every prompt, posted from a thread each at once.
std::vector<json> post_all_at_once(const TestServer& server,
                                   const std::vector<std::string>& prompts, int64_t tokens) {
  std::vector<std::future<json>> pending;
  for (const auto& p : prompts) {
    pending.push_back(std::async(std::launch::async, [&server, p, tokens] {
      return post(server, "/v1/completions", greedy(p, tokens));
    }));
  }
  std::vector<json> answers;
  for (auto& answer : pending) answers.push_back(answer.get());
  return answers;
}

TEST(OpenAiServer, GreedyAnswersAreGeneratesAloneOrBatched) {
  SKIP_WITHOUT_TOKENIZER();
  TestServer server;
  const std::vector<std::string> prompts = {
      "The tallest mountain is", "Hello",    "1, 2, 3,", "Paris is the capital of",
      "Once upon a time there",  "def f(x):"};
  std::vector<std::string> expected;
  for (const auto& p : prompts) expected.push_back(reference_text(server, p, 12));
  // All at once: the scheduler batches them (prefill chunks beside decodes).
  const std::vector<json> answers = post_all_at_once(server, prompts, 12);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const json& answer = answers[i];
    EXPECT_EQ(answer["object"], "text_completion");
    EXPECT_EQ(answer["choices"][0]["text"], expected[i]) << prompts[i];
    EXPECT_EQ(answer["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(answer["usage"]["completion_tokens"], 12);
    EXPECT_EQ(answer["usage"]["prompt_tokens"], server.tokenizer().encode(prompts[i], true).size());
  }
  // Streamed: the deltas make the same text, and the stream ends with usage and [DONE].
  json body = greedy(prompts[0], 12);
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  const Streamed s = post_stream(server, "/v1/completions", body);
  EXPECT_EQ(s.status, 200);
  EXPECT_TRUE(s.done);
  std::string text;
  for (const auto& c : s.chunks) {
    if (!c["choices"].empty()) text += c["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, expected[0]);
  ASSERT_GE(s.chunks.size(), 2u);
  EXPECT_EQ(s.chunks[s.chunks.size() - 2]["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(s.chunks.back()["usage"]["completion_tokens"], 12);
}

TEST(OpenAiServer, PreemptedBySwapTheAnswersStayGeneratesAlone) {
  SKIP_WITHOUT_TOKENIZER();
  // Five blocks of 16 tokens for four requests of about 5 + 40 tokens (three blocks each): any
  // two at once do not fit, so the latest admitted are preempted, their KV to host memory and
  // back.
  TestServer server({.kv_blocks = 5, .preemption = PreemptionMode::swap});
  const std::vector<std::string> prompts = {"The tallest mountain is", "Hello there", "1, 2, 3,",
                                            "Paris is the capital of"};
  std::vector<std::string> expected;
  for (const auto& p : prompts) expected.push_back(reference_text(server, p, 40));
  const std::vector<json> answers = post_all_at_once(server, prompts, 40);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(answers[i]["choices"][0]["text"], expected[i]) << prompts[i];
  }
  EXPECT_GT(server.metrics().gauges().preemptions, 0);
}

TEST(OpenAiServer, ChatStopStringsSeedsAndTokenPrompts) {
  SKIP_WITHOUT_TOKENIZER();
  TestServer server;
  // Chat: the Llama 3 template, the first chunk carries the role.
  json chat = {{"model", "tiny"},    {"messages", {{{"role", "user"}, {"content", "Hi"}}}},
               {"max_tokens", 4},    {"temperature", 0},
               {"ignore_eos", true}, {"stream", true}};
  const Streamed s = post_stream(server, "/v1/chat/completions", chat);
  ASSERT_TRUE(s.done);
  EXPECT_EQ(s.chunks.front()["object"], "chat.completion.chunk");
  EXPECT_EQ(s.chunks.front()["choices"][0]["delta"]["role"], "assistant");
  // A stop string: the text ends before it, finish_reason "stop".
  const std::string full = reference_text(server, "Hello", 16);
  ASSERT_GE(full.size(), 8u);
  // Three bytes or more from the middle, on UTF-8 character boundaries.
  const auto continuation = [&](size_t i) {
    return i < full.size() && (static_cast<unsigned char>(full[i]) & 0xC0) == 0x80;
  };
  size_t begin = full.size() / 2, end = begin + 3;
  while (continuation(begin)) --begin;
  while (continuation(end)) ++end;
  const std::string stop = full.substr(begin, end - begin);
  json stopped = greedy("Hello", 16);
  stopped["stop"] = stop;
  const json answer = post(server, "/v1/completions", stopped);
  EXPECT_EQ(answer["choices"][0]["text"], full.substr(0, full.find(stop)));
  EXPECT_EQ(answer["choices"][0]["finish_reason"], "stop");
  // Sampling with a seed is reproducible; a token-id prompt is taken as given.
  json sampled = {{"model", "tiny"}, {"prompt", {791, 82717, 16700, 374}},
                  {"max_tokens", 8}, {"temperature", 1.0},
                  {"seed", 11},      {"ignore_eos", true}};
  const json a = post(server, "/v1/completions", sampled),
             b = post(server, "/v1/completions", sampled);
  EXPECT_EQ(a["choices"][0]["text"], b["choices"][0]["text"]);
  EXPECT_EQ(a["usage"]["prompt_tokens"], 4);
}

TEST(OpenAiServer, ModelsHealthMetricsAndJsonErrors) {
  SKIP_WITHOUT_TOKENIZER();
  testing::ServerSetup setup;
  setup.max_body_bytes = 4096;
  TestServer server(setup);
  auto client = server.client();
  auto models = client.Get("/v1/models");
  ASSERT_TRUE(models);
  const json list = json::parse(models->body);
  EXPECT_EQ(list["data"][0]["id"], "tiny");
  EXPECT_EQ(list["data"][0]["max_model_len"], testing::kContext);
  auto health = client.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  post(server, "/v1/completions", greedy("Hello", 3));
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("inferlab:generation_tokens_total{model_name=\"tiny\"} 3\n"),
            std::string::npos)
      << metrics->body;
  EXPECT_NE(metrics->body.find("inferlab:time_to_first_token_seconds_count{model_name=\"tiny\"} 1"),
            std::string::npos);
  // Refusals: status, and an OpenAI-style JSON error.
  const auto refused = [&](const std::string& path, const std::string& body, int status,
                           const std::string& part) {
    auto res = client.Post(path.c_str(), body, "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, status) << body.substr(0, 80);
    const json error = json::parse(res->body, nullptr, false);
    ASSERT_FALSE(error.is_discarded()) << res->body;
    EXPECT_NE(error["error"]["message"].get<std::string>().find(part), std::string::npos)
        << res->body;
  };
  refused("/v1/completions", "{oops", 400, "not valid JSON");
  refused("/v1/completions", R"({"model": "gpt-4", "prompt": "x"})", 400, "does not exist");
  refused("/v1/completions", json({{"model", "tiny"}, {"prompt", std::vector<int>(300, 5)}}).dump(),
          400, "maximum context length is 256");
  refused("/v1/completions", R"({"model": "tiny", "prompt": [128256]})", 400,
          "outside the vocabulary");
  refused("/v1/completions", R"({"model": "tiny", "prompt": "x", "max_tokens": 300})", 400,
          "maximum context length");
  refused("/v1/chat/completions", R"({"model": "tiny", "messages": "hi"})", 400, "non-empty array");
  refused("/v1/completions", std::string(5000, ' '), 413, "larger than");
  refused("/v1/nothing", "{}", 404, "no such route");
}

TEST(OpenAiServer, FullQueueIs429AndAGoneClientFreesItsBlocks) {
  SKIP_WITHOUT_TOKENIZER();
  testing::ServerSetup setup;
  setup.max_num_seqs = 1;
  setup.max_queue = 0;
  TestServer server(setup);
  json endless = greedy("Hello", 200);
  endless["stream"] = true;
  // The one slot: a long stream whose client hangs up after 3 chunks.
  auto hangs_up = std::async(std::launch::async,
                             [&] { return post_stream(server, "/v1/completions", endless, 3); });
  // Wait until it runs, then a second request finds the queue full.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (server.metrics().gauges().running == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  int status = 0;
  const json full = post(server, "/v1/completions", greedy("Hi", 2), &status);
  const Streamed gone = hangs_up.get();
  if (status != 429) {
    GTEST_SKIP() << "the long request ended before the second came (a very slow machine)";
  }
  EXPECT_EQ(full["error"]["type"], "rate_limit_error");
  EXPECT_FALSE(gone.done);
  // Its sequence ends and every block goes back without waiting for its 200 tokens.
  LoopGauges g = server.metrics().gauges();
  while ((g.running > 0 || g.kv_blocks_used > 0) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    g = server.metrics().gauges();
  }
  EXPECT_EQ(g.running, 0);
  EXPECT_EQ(g.kv_blocks_used, 0);
  auto metrics = server.client().Get("/metrics");
  EXPECT_NE(metrics->body.find("finished_reason=\"abort\"} 1"), std::string::npos);
  EXPECT_NE(metrics->body.find("inferlab:generation_tokens_total{model_name=\"tiny\"} "),
            std::string::npos);
}

TEST(OpenAiServer, SpeculationKeepsTheGreedyAnswers) {
  SKIP_WITHOUT_TOKENIZER();
  testing::ServerSetup setup;
  setup.speculative_k = 3;  // n-gram drafts, verified in the iteration's forward pass
  setup.prefix_caching = true;
  TestServer server(setup);
  // Repetitive prompts give the n-gram lookup something to propose.
  const std::vector<std::string> prompts = {"1, 2, 3, 1, 2, 3, 1, 2, 3,", "the cat the cat the cat",
                                            "Hello"};
  std::vector<std::future<json>> answers;
  for (const auto& p : prompts) {
    answers.push_back(std::async(
        std::launch::async, [&, p] { return post(server, "/v1/completions", greedy(p, 20)); }));
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    const json answer = answers[i].get();
    EXPECT_EQ(answer["choices"][0]["text"], reference_text(server, prompts[i], 20)) << prompts[i];
    EXPECT_EQ(answer["usage"]["completion_tokens"], 20);
  }
  // The decode steps did verify drafts (1 + 3 tokens each).
  EXPECT_GT(server.metrics().gauges().draft_tokens, 0);
  auto metrics = server.client().Get("/metrics");
  EXPECT_NE(metrics->body.find("inferlab:spec_decode_num_draft_tokens_total"), std::string::npos);
}

// A draft model beside the target (its twin: every draft is kept), greedy and sampled requests
// batched together.
TEST(OpenAiServer, SpeculationWithADraftModelKeepsTheGreedyAnswers) {
  SKIP_WITHOUT_TOKENIZER();
  testing::ServerSetup setup;
  setup.speculative_k = 3;
  setup.draft_model = true;
  setup.prefix_caching = true;
  TestServer server(setup);
  const std::vector<std::string> prompts = {"the cat the cat the cat", "Hello", "Hello there"};
  std::vector<std::future<json>> answers;
  for (const auto& p : prompts) {
    answers.push_back(std::async(
        std::launch::async, [&, p] { return post(server, "/v1/completions", greedy(p, 20)); }));
  }
  json sampled = greedy("Once upon a time", 20);
  sampled["temperature"] = 0.8;
  sampled["seed"] = 7;
  const json first = post(server, "/v1/completions", sampled);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const json answer = answers[i].get();
    EXPECT_EQ(answer["choices"][0]["text"], reference_text(server, prompts[i], 20)) << prompts[i];
    EXPECT_EQ(answer["usage"]["completion_tokens"], 20);
  }
  EXPECT_EQ(first["usage"]["completion_tokens"], 20);
  // The same seed, the same draws: the same text.
  EXPECT_EQ(post(server, "/v1/completions", sampled)["choices"][0]["text"],
            first["choices"][0]["text"]);
  const LoopGauges g = server.metrics().gauges();
  EXPECT_GT(g.draft_tokens, 0);
  EXPECT_EQ(g.accepted_draft_tokens, g.draft_tokens);  // the twin agrees with the target
}

TEST(OpenAiServer, PrefixCachingReusesBlocksAndKeepsTheAnswer) {
  SKIP_WITHOUT_TOKENIZER();
  testing::ServerSetup setup;
  setup.prefix_caching = true;
  TestServer server(setup);
  std::vector<int> prompt(100);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int>(1000 + 7 * i);
  const json body = {{"model", "tiny"},
                     {"prompt", prompt},
                     {"max_tokens", 6},
                     {"temperature", 0},
                     {"ignore_eos", true}};
  const json first = post(server, "/v1/completions", body);
  const json second = post(server, "/v1/completions", body);
  EXPECT_EQ(first["choices"][0]["text"], second["choices"][0]["text"]);
  // The second request found the first's 6 full blocks of 16 (96 of its 100 prompt tokens).
  EXPECT_EQ(server.metrics().gauges().prefix_hit_tokens, 96);
}

}  // namespace
}  // namespace inferlab::server
