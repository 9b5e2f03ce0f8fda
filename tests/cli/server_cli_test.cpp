// `inferlab server` as a process: it says where it listens, serves, and on SIGTERM finishes
// the stream it accepted, refuses new work and exits 0. Bad flags are exit 2.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <regex>
#include <thread>

#include "server/sse.hpp"
#include "test_support.hpp"

namespace inferlab {
namespace {

std::filesystem::path scratch(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("inferlab_server_cli_" + name + "_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(ServerCli, SigtermFinishesAcceptedStreamsAndExitsZero) {
  if (!testing::have_llama3_tokenizer()) GTEST_SKIP() << "Llama 3 tokenizer not fetched";
  const auto dir = scratch("sigterm");
  std::ofstream(dir / "config.json") << testing::tiny_llama_config(128256, 512).dump();
  const auto init = testing::run_inferlab("init-weights --model " + (dir / "config.json").string() +
                                          " --out " + (dir / "ckpt").string() + " --seed 1");
  ASSERT_EQ(init.exit_code, 0) << init.err;
  const auto log = dir / "server.log";
  const pid_t pid = fork();
  if (pid == 0) {
    freopen(log.c_str(), "w", stderr);
    execl(testing::inferlab_binary().c_str(), "inferlab", "server", "--model",
          (dir / "ckpt").c_str(), "--device", "cpu", "--port", "0", "--kv-tokens", "2048",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  // The port, from "serving ... on http://127.0.0.1:PORT".
  int port = 0;
  for (int i = 0; i < 300 && port == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream in(log);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::smatch m;
    if (std::regex_search(text, m, std::regex("http://127\\.0\\.0\\.1:(\\d+)")))
      port = std::stoi(m[1]);
  }
  ASSERT_GT(port, 0) << "the server never said where it listens";
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
  kill(pid, SIGTERM);
  const auto [done, chunks] = streamed.get();
  EXPECT_TRUE(done);      // the accepted stream ran to its end
  EXPECT_GE(chunks, 2u);  // text chunks (one carries any tokens that came together), the finish
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  std::filesystem::remove_all(dir);
}

TEST(ServerCli, BadFlagsAreExitTwo) {
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
  });
}

}  // namespace
}  // namespace inferlab
