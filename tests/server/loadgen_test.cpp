// The load generator against the in-process server (CPU reference) and against a server that
// fails every request: every request is measured or counted as failed, never lost or hung.
#include "server/loadgen.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "self_signed_cert.hpp"
#include "serve/metrics.hpp"
#include "server_test_support.hpp"
#include "util/error.hpp"

namespace inferlab::server {
namespace {

std::vector<ServeRequest> requests(int n, double gap_s) {
  std::vector<ServeRequest> out;
  for (int i = 0; i < n; ++i) {
    ServeRequest r;
    r.arrival_s = gap_s * i;
    r.prompt_tokens = 20 + 7 * i;
    r.output_tokens = 4 + i % 5;
    if (i % 2 == 0) {
      r.prefix_id = 0;
      r.prefix_tokens = 16;
    }
    out.push_back(r);
  }
  return out;
}

TEST(Loadgen, PromptsShareTheirPrefixIds) {
  const auto reqs = requests(4, 0);
  const auto a = loadgen_prompt(reqs[0], 0, 1, 1000), c = loadgen_prompt(reqs[2], 2, 1, 1000);
  const auto b = loadgen_prompt(reqs[1], 1, 1, 1000);
  ASSERT_EQ(a.size(), 20u);
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + 16, c.begin()));  // the shared 16
  EXPECT_NE(std::vector<int32_t>(a.begin() + 16, a.end()),
            std::vector<int32_t>(c.begin() + 16, c.begin() + 20));
  EXPECT_NE(std::vector<int32_t>(a.begin(), a.begin() + 16),
            std::vector<int32_t>(b.begin(), b.begin() + 16));
  for (int32_t id : b) EXPECT_LT(id, 1000);
  EXPECT_EQ(loadgen_prompt(reqs[1], 1, 1, 1000), b);  // deterministic
}

TEST(Loadgen, MeasuresEveryRequestOfALiveServer) {
  if (!inferlab::testing::have_llama3_tokenizer()) GTEST_SKIP() << "Llama 3 tokenizer not fetched";
  testing::TestServer server;
  LoadgenOptions options;
  options.url = "http://127.0.0.1:" + std::to_string(server.port());
  options.vocab_size = 128000;
  const auto reqs = requests(10, 0.01);
  const LoadgenResult result = run_loadgen(reqs, options);
  EXPECT_EQ(result.model, "tiny");  // from /v1/models
  EXPECT_EQ(result.failed, 0) << (result.failures.empty() ? "" : result.failures[0]);
  const ServeSummary s = summarize(result.run);
  EXPECT_EQ(s.completed, 10);
  for (size_t i = 0; i < reqs.size(); ++i) {
    const RequestOutcome& r = result.run.requests[i];
    EXPECT_EQ(r.output_tokens, reqs[i].output_tokens);
    EXPECT_GT(r.first_token_s, r.arrival_s);
    EXPECT_GE(r.finish_s, r.first_token_s);
    // One gap per later chunk; a chunk can carry several tokens (or a token no text yet).
    EXPECT_LE(static_cast<int64_t>(r.inter_token_s.size()), reqs[i].output_tokens - 1);
  }
  EXPECT_GT(s.output_tokens_per_s, 0);
  // The server saw exactly these prompts and outputs.
  int64_t prompt_tokens = 0, output_tokens = 0;
  for (const auto& r : reqs) {
    prompt_tokens += r.prompt_tokens;
    output_tokens += r.output_tokens;
  }
  const std::string metrics = server.client().Get("/metrics")->body;
  EXPECT_NE(metrics.find("inferlab:prompt_tokens_total{model_name=\"tiny\"} " +
                         std::to_string(prompt_tokens) + "\n"),
            std::string::npos);
  EXPECT_NE(metrics.find("inferlab:generation_tokens_total{model_name=\"tiny\"} " +
                         std::to_string(output_tokens) + "\n"),
            std::string::npos);
}

// A server behind HTTPS (self-signed) and an API key: the load generator trusts the certificate
// and sends the key; without the key it stops at the model list, with a wrong one every request
// fails as a 401.
TEST(Loadgen, SendsTheKeyOverHttps) {
  if (!inferlab::testing::have_llama3_tokenizer()) GTEST_SKIP() << "Llama 3 tokenizer not fetched";
  const auto dir =
      std::filesystem::temp_directory_path() / ("inferlab_loadgen_tls_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto files = testing::write_self_signed_cert(dir);
  testing::ServerSetup setup;
  setup.api_keys = {"sk-load"};
  setup.tls = {files.cert, files.key};
  testing::TestServer server(setup);
  LoadgenOptions options;
  options.url = server.url();
  options.vocab_size = 128000;
  options.ca_cert = files.cert;
  const auto reqs = requests(4, 0.0);
  EXPECT_THROW(run_loadgen(reqs, options), InputError);  // 401 on /v1/models
  options.api_key = "sk-load";
  const LoadgenResult result = run_loadgen(reqs, options);
  EXPECT_EQ(result.model, "tiny");
  EXPECT_EQ(result.failed, 0) << (result.failures.empty() ? "" : result.failures[0]);
  options.api_key = "sk-wrong";
  options.model = "tiny";
  const LoadgenResult refused = run_loadgen(reqs, options);
  EXPECT_EQ(refused.failed, 4);
  ASSERT_FALSE(refused.failures.empty());
  EXPECT_NE(refused.failures[0].find("HTTP 401"), std::string::npos) << refused.failures[0];
  std::filesystem::remove_all(dir);
}

// A fake server answering every completion with `handler`, on a free port, while it lives.
class FakeServer {
 public:
  explicit FakeServer(httplib::Server::Handler handler) {
    http_.Post("/v1/completions", std::move(handler));
    port_ = http_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { http_.listen_after_bind(); });
  }
  ~FakeServer() {
    http_.stop();
    thread_.join();
  }
  LoadgenOptions options(double timeout_s = 5) const {
    LoadgenOptions o;
    o.url = "http://127.0.0.1:" + std::to_string(port_);
    o.model = "m";
    o.timeout_s = timeout_s;
    return o;
  }

 private:
  httplib::Server http_;
  int port_ = 0;
  std::thread thread_;
};

void expect_all_failed(const LoadgenResult& result, int requests, const std::string& why) {
  EXPECT_EQ(result.failed, requests);
  ASSERT_FALSE(result.failures.empty());
  EXPECT_NE(result.failures[0].find(why), std::string::npos) << result.failures[0];
  EXPECT_EQ(summarize(result.run).completed, 0);
}

TEST(Loadgen, FailuresAreCountedNotLost) {
  FakeServer error([](const httplib::Request&, httplib::Response& res) {
    res.status = 500;
    res.set_content("{\"error\": {\"message\": \"boom\"}}", "application/json");
  });
  expect_all_failed(run_loadgen(requests(3, 0.0), error.options()), 3, "HTTP 500");
  // A stream that stops before [DONE].
  FakeServer truncated([](const httplib::Request&, httplib::Response& res) {
    res.set_content("data: {\"choices\": [{\"text\": \"a\"}]}\n\n", "text/event-stream");
  });
  expect_all_failed(run_loadgen(requests(2, 0.0), truncated.options()), 2, "without [DONE]");
  // A stream that says it is done with fewer tokens than asked.
  FakeServer short_stream([](const httplib::Request&, httplib::Response& res) {
    res.set_content("data: {\"choices\": [{\"text\": \"a\"}]}\n\ndata: [DONE]\n\n",
                    "text/event-stream");
  });
  expect_all_failed(run_loadgen(requests(2, 0.0), short_stream.options()), 2, "tokens");
  // A server that stalls past the timeout: the request fails, the run does not hang. The bound
  // is 9 s past a 0.5 s timeout, so no busy machine breaks it, yet it is under the 10 s stall.
  FakeServer stalled([](const httplib::Request&, httplib::Response& res) {
    std::this_thread::sleep_for(std::chrono::seconds(10));
    res.set_content("data: [DONE]\n\n", "text/event-stream");
  });
  const auto start = std::chrono::steady_clock::now();
  const LoadgenResult late = run_loadgen(requests(1, 0.0), stalled.options(0.5));
  EXPECT_EQ(late.failed, 1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(9500));
}

TEST(Loadgen, RefusesBadOptions) {
  LoadgenOptions options;
  options.url = "ftp://example";
  EXPECT_THROW(run_loadgen(requests(1, 0), options), InputError);
  options.url = "http://127.0.0.1:1";  // nothing listens: no model list
  EXPECT_THROW(run_loadgen(requests(1, 0), options), InputError);
}

}  // namespace
}  // namespace inferlab::server

namespace inferlab::server {
namespace {

// A burst far past httplib's own listen backlog of 5: every client is served (the server
// listens again with a deep backlog).
TEST(Loadgen, BurstOfClientsIsServedWhole) {
  if (!inferlab::testing::have_llama3_tokenizer()) GTEST_SKIP() << "Llama 3 tokenizer not fetched";
  testing::ServerSetup setup;
  setup.max_queue = 200;
  testing::TestServer server(setup);
  LoadgenOptions options;
  options.url = "http://127.0.0.1:" + std::to_string(server.port());
  options.vocab_size = 128000;
  std::vector<ServeRequest> burst(60);
  for (auto& r : burst) {
    r.prompt_tokens = 8;
    r.output_tokens = 2;
  }
  const LoadgenResult result = run_loadgen(burst, options);
  EXPECT_EQ(result.failed, 0) << (result.failures.empty() ? "" : result.failures[0]);
}

}  // namespace
}  // namespace inferlab::server
