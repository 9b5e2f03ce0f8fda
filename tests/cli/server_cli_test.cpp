// `inferlab server` as a process: it says where it listens, serves, and on SIGTERM finishes
// the stream it accepted, refuses new work and exits 0; its keys come from the environment and
// key files. Bad flags (keys and certificates too) are exit 2.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "server/sse.hpp"
#include "server_process.hpp"
#include "test_support.hpp"

namespace inferlab {
namespace {

std::filesystem::path scratch(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("inferlab_server_cli_" + name + "_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

// A tiny checkpoint (init-weights copies the Llama 3 tokenizer into it) in `dir`/ckpt.
void make_checkpoint(const std::filesystem::path& dir) {
  std::ofstream(dir / "config.json") << testing::tiny_llama_config(128256, 512).dump();
  const auto init = testing::run_inferlab("init-weights --model " + (dir / "config.json").string() +
                                          " --out " + (dir / "ckpt").string() + " --seed 1");
  ASSERT_EQ(init.exit_code, 0) << init.err;
}

TEST(ServerCli, SigtermFinishesAcceptedStreamsAndExitsZero) {
  if (!testing::have_llama3_tokenizer()) GTEST_SKIP() << "Llama 3 tokenizer not fetched";
  const auto dir = scratch("sigterm");
  make_checkpoint(dir);
  testing::ServerProcess server(
      {"--model", (dir / "ckpt").string(), "--device", "cpu", "--port", "0", "--kv-tokens", "2048"},
      dir / "server.log");
  const int port = server.wait_for_port();
  ASSERT_GT(port, 0) << "the server never said where it listens\n" << server.log_text();
  // A long stream; SIGTERM once its first chunk is here.
  std::promise<void> first_chunk;
  auto streamed = std::async(std::launch::async, [&] {
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(60, 0);
    server::SseParser parser;
    bool done = false, signalled = false;
    size_t chunks = 0;
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = R"({"model": "ckpt", "prompt": "Hello", "max_tokens": 150, "ignore_eos": true,
                   "temperature": 0, "stream": true})";
    req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
      for (const auto& e : parser.feed(std::string_view(data, size))) {
        if (e == server::kSseDone)
          done = true;
        else
          ++chunks;
      }
      if (!signalled) {
        signalled = true;
        first_chunk.set_value();
      }
      return true;
    };
    client.send(req);
    return std::make_pair(done, chunks);
  });
  ASSERT_EQ(first_chunk.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
  server.signal(SIGTERM);
  const auto [done, chunks] = streamed.get();
  EXPECT_TRUE(done);      // the accepted stream ran to its end
  EXPECT_GE(chunks, 2u);  // text chunks (one carries any tokens that came together), the finish
  ASSERT_TRUE(server.wait_exit());
  EXPECT_TRUE(server.exited_with(0)) << server.how_it_ended() << "\n" << server.log_text();
  std::filesystem::remove_all(dir);
}

// Keys from INFERLAB_API_KEY and a key file; listening beyond the loopback with them gives no
// warning, without them it does.
TEST(ServerCli, KeysFromTheEnvironmentAndAFile) {
  if (!testing::have_llama3_tokenizer()) GTEST_SKIP() << "Llama 3 tokenizer not fetched";
  const auto dir = scratch("keys");
  make_checkpoint(dir);
  std::ofstream(dir / "keys.txt") << "# keys\nsk-from-file\n";
  const std::vector<std::string> common = {
      "--model", (dir / "ckpt").string(), "--device", "cpu", "--port", "0", "--host", "0.0.0.0"};
  {
    std::vector<std::string> args = common;
    args.insert(args.end(), {"--api-key-file", (dir / "keys.txt").string()});
    testing::ServerProcess server(args, dir / "keyed.log", {"INFERLAB_API_KEY=sk-from-env"});
    const int port = server.wait_for_port();
    ASSERT_GT(port, 0) << server.log_text();
    httplib::Client client("127.0.0.1", port);
    EXPECT_EQ(client.Get("/v1/models")->status, 401);
    EXPECT_EQ(client.Get("/v1/models", {{"Authorization", "Bearer sk-wrong"}})->status, 401);
    EXPECT_EQ(client.Get("/v1/models", {{"Authorization", "Bearer sk-from-env"}})->status, 200);
    EXPECT_EQ(client.Get("/v1/models", {{"Authorization", "Bearer sk-from-file"}})->status, 200);
    EXPECT_EQ(client.Get("/health")->status, 200);
    server.signal(SIGTERM);
    ASSERT_TRUE(server.wait_exit());
    EXPECT_TRUE(server.exited_with(0)) << server.how_it_ended();
    EXPECT_EQ(server.log_text().find("warning"), std::string::npos) << server.log_text();
    EXPECT_NE(server.log_text().find("2 API key(s)"), std::string::npos) << server.log_text();
  }
  {
    testing::ServerProcess server(common, dir / "open.log");
    ASSERT_GT(server.wait_for_port(), 0) << server.log_text();
    server.signal(SIGTERM);
    ASSERT_TRUE(server.wait_exit());
    EXPECT_NE(server.log_text().find("inferlab: warning: listening on 0.0.0.0 without an API key"),
              std::string::npos)
        << server.log_text();
  }
  std::filesystem::remove_all(dir);
}

TEST(ServerCli, BadFlagsAreExitTwo) {
  const auto dir = scratch("flags");
  const auto not_pem = dir / "not.pem";
  std::ofstream(not_pem) << "not a certificate\n";
  testing::expect_refused({
      "server --model /nonexistent/model --device cpu",
      "server --model llama-3.2-1b --device cpu --port 70000",
      "server --model llama-3.2-1b --device cpu --policy static",
      "server --model llama-3.2-1b --device cpu --preemption evict",
      "server --model llama-3.2-1b --device cpu --max-num-seqs 0",
      "server --model llama-3.2-1b --device cpu --gemm-warmup maybe",
      // A draft of another vocabulary (refused before any weight loads).
      "server --model llama-3.2-1b --device cpu --speculative draft=qwen2.5-1.5b,k=4",
      "loadgen --url http://127.0.0.1:1 --rate 1 --requests 1",
      "loadgen --url ftp://example --model m --rate 1 --requests 1",
      "loadgen --url http://127.0.0.1:1 --model m --rate -1 --requests 1",
      "loadgen --url https://127.0.0.1:1 --model m --rate 1 --requests 1 --ca-cert /nonexistent",
      // Keys and certificates, checked before anything loads.
      "server --model llama-3.2-1b --device cpu --api-key-file /nonexistent/keys",
      "server --model llama-3.2-1b --device cpu --api-key 'two words'",
      "server --model llama-3.2-1b --device cpu --protect-metrics",
      "server --model llama-3.2-1b --device cpu --ssl-certfile /nonexistent/cert.pem",
      "server --model llama-3.2-1b --device cpu --ssl-certfile /nonexistent/cert.pem "
      "--ssl-keyfile /nonexistent/key.pem",
      "server --model llama-3.2-1b --device cpu --ssl-certfile " + not_pem.string() +
          " --ssl-keyfile " + not_pem.string(),
  });
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace inferlab
