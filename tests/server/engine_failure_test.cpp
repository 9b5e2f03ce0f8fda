// An engine failure inside one iteration, on the CPU reference with a fault injected by a Backend
// decorator: the iteration's requests are answered with errors (a 500 JSON error, or a stream's
// error event and its end), their KV blocks go back, and the server serves the next requests
// exactly as a fresh one would. Only a fatal failure stops it.
#include "server/engine_failure.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "faulty_backend.hpp"
#include "server_test_support.hpp"
#include "skip_without_tokenizer.hpp"
#include "util/error.hpp"

namespace inferlab::server {
namespace {

using nlohmann::json;
using testing::FaultyBackend;
using testing::greedy;
using testing::post;
using testing::TestServer;

// A server whose backend is a FaultyBackend, reachable through `faulty`.
testing::ServerSetup faulty_setup(FaultyBackend*& faulty, int64_t max_num_seqs = 8) {
  testing::ServerSetup setup;
  setup.max_num_seqs = max_num_seqs;
  setup.wrap_backend = [&faulty](std::unique_ptr<engine::Backend> inner) {
    auto wrapped = std::make_unique<FaultyBackend>(std::move(inner));
    faulty = wrapped.get();
    return std::unique_ptr<engine::Backend>(std::move(wrapped));
  };
  return setup;
}

// Waits (at most 20 s) until `done` holds; whether it did.
template <typename Condition>
bool eventually(Condition done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

std::string text_of(const json& answer) {
  return answer["choices"][0]["text"].get<std::string>();
}

TEST(OpenAiServerEngineFailure, TheFailedIterationsRequestsGetErrorsAndTheServerGoesOn) {
  SKIP_WITHOUT_TOKENIZER();
  FaultyBackend* faulty = nullptr;
  TestServer server(faulty_setup(faulty, /*max_num_seqs=*/1));
  ASSERT_NE(faulty, nullptr);
  const json second = greedy("1, 2, 3,", 12);

  // A stream fails in its fourth pass (prefill, two decodes, then the fault) while a second
  // request waits for the one sequence slot: only the stream's iteration fails.
  std::future<void> failing_pass = faulty->fail_in_held(4);
  json streamed = greedy("Hello", 40);
  streamed["stream"] = true;
  auto first = std::async(std::launch::async, [&] {
    return testing::post_stream(server, "/v1/completions", streamed);
  });
  ASSERT_EQ(failing_pass.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  auto waiting =
      std::async(std::launch::async, [&] { return post(server, "/v1/completions", second); });
  ASSERT_TRUE(eventually([&] { return server.loop().in_flight() == 2; }));
  faulty->release();

  const testing::Streamed failed = first.get();
  EXPECT_EQ(failed.status, 200);  // the stream had begun
  EXPECT_TRUE(failed.done);       // an error event, then the end
  ASSERT_FALSE(failed.chunks.empty());
  const json& event = failed.chunks.back();
  ASSERT_TRUE(event.contains("error")) << event.dump();
  EXPECT_EQ(event["error"]["type"], "server_error");
  EXPECT_NE(event["error"]["message"].get<std::string>().find("injected fault"), std::string::npos);

  // A fresh server's answer, the reference for every later one.
  std::string expected;
  {
    TestServer fresh;
    expected = text_of(post(fresh, "/v1/completions", second));
  }
  EXPECT_EQ(text_of(waiting.get()), expected);

  // A request that is not streamed: its second pass fails, the answer is a 500 JSON error.
  faulty->fail_in(2);
  int status = 0;
  const json error = post(server, "/v1/completions", greedy("Paris is", 8), &status);
  EXPECT_EQ(status, 500);
  EXPECT_EQ(error["error"]["type"], "server_error");
  EXPECT_NE(error["error"]["message"].get<std::string>().find("the engine failed"),
            std::string::npos);

  // The server goes on, with the tokens a fresh server gives and every KV block back.
  EXPECT_EQ(text_of(post(server, "/v1/completions", second)), expected);
  ASSERT_TRUE(eventually([&] {
    const LoopGauges g = server.metrics().gauges();
    return g.running == 0 && g.waiting == 0;
  }));
  const LoopGauges g = server.metrics().gauges();
  EXPECT_EQ(g.kv_blocks_used, 0);
  EXPECT_EQ(g.kv_blocks_total, 64);
  EXPECT_EQ(server.loop().fatal_error(), "");
  auto client = server.client();
  EXPECT_EQ(client.Get("/health")->status, 200);
  const std::string metrics = client.Get("/metrics")->body;
  EXPECT_NE(metrics.find("finished_reason=\"error\"} 2"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("finished_reason=\"length\"} 2"), std::string::npos) << metrics;
}

TEST(OpenAiServerEngineFailure, AStickyCudaErrorStopsServing) {
  SKIP_WITHOUT_TOKENIZER();
  FaultyBackend* faulty = nullptr;
  TestServer server(faulty_setup(faulty));
  faulty->fail_always("CUDA: kernel launch: an illegal memory access was encountered");
  int status = 0;
  post(server, "/v1/completions", greedy("Hello", 4), &status);
  EXPECT_EQ(status, 500);
  EXPECT_NE(server.loop().fatal_error().find("illegal memory access"), std::string::npos);
  // New work is refused, and /health says so (a load balancer takes the server out).
  const json refused = post(server, "/v1/completions", greedy("Hello", 4), &status);
  EXPECT_EQ(status, 503);
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("the engine failed"),
            std::string::npos);
  EXPECT_EQ(server.client().Get("/health")->status, 503);
}

TEST(OpenAiServerEngineFailure, FailuresInARowWithNothingRunningBetweenAreFatal) {
  SKIP_WITHOUT_TOKENIZER();
  FaultyBackend* faulty = nullptr;
  TestServer server(faulty_setup(faulty));
  faulty->fail_always("injected fault");
  int status = 0;
  for (int i = 0; i < kMaxConsecutiveFailedIterations; ++i) {
    EXPECT_EQ(server.loop().fatal_error(), "") << "after " << i << " failures";
    post(server, "/v1/completions", greedy("Hello", 4), &status);
    EXPECT_EQ(status, 500) << "request " << i;
  }
  EXPECT_NE(server.loop().fatal_error().find("injected fault"), std::string::npos);
  post(server, "/v1/completions", greedy("Hello", 4), &status);
  EXPECT_EQ(status, 503);
}

TEST(OpenAiServerEngineFailure, OnlyStickyCudaErrorsAreFatalByThemselves) {
  using E = std::runtime_error;
  EXPECT_TRUE(
      is_fatal_engine_error(E("CUDA: cudaMemcpy to host: an illegal memory access was "
                              "encountered")));
  EXPECT_TRUE(is_fatal_engine_error(E("CUDA: kernel launch: unspecified launch failure")));
  EXPECT_TRUE(
      is_fatal_engine_error(E("CUDA: cudaStreamSynchronize: device-side assert triggered")));
  EXPECT_FALSE(is_fatal_engine_error(E("CUDA: cudaMalloc: out of memory")));  // frees with them
  EXPECT_FALSE(is_fatal_engine_error(E("an illegal memory access was encountered")));  // not CUDA's
  EXPECT_FALSE(is_fatal_engine_error(InputError("token id 9999999 is outside the vocabulary")));
  EXPECT_FALSE(is_fatal_engine_error(std::logic_error("serving executor: a bad swap")));
}

}  // namespace
}  // namespace inferlab::server
