// Tensor parallelism with a process per rank, through the real binary: ranks launched by rank 0
// and ranks started by hand (flags or torchrun's environment) give the threaded group's logits
// bit for bit; a killed rank stops rank 0 with an error naming it (and rank 0 gone ends the
// workers), never a hang; mismatched ranks, nobody joining and bad flags are exit 2.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "server/sse.hpp"
#include "server_process.hpp"
#include "test_support.hpp"
#include "tp_process_support.hpp"

extern char** environ;

namespace inferlab {
namespace {

using testing::children_of;
using testing::free_port;
using testing::read_file;
using testing::run_inferlab;
using testing::scratch;
using Child = testing::InferlabProcess;

// A tiny untied Llama without a tokenizer (4 heads and 2 KV heads: 2 ranks), at dir/`name`.
std::filesystem::path tiny_checkpoint(const std::filesystem::path& dir, const std::string& name,
                                      int64_t vocab, int seed) {
  nlohmann::json config = testing::tiny_llama_config(vocab, 64);
  config["tie_word_embeddings"] = false;
  std::ofstream(dir / (name + ".json")) << config.dump();
  const auto init =
      run_inferlab("init-weights --model " + (dir / (name + ".json")).string() + " --out " +
                   (dir / name).string() + " --tokenizer none --seed " + std::to_string(seed));
  EXPECT_EQ(init.exit_code, 0) << init.err;
  return dir / name;
}

// Teacher-forced logits of 12 tokens (a prefill of 5, then decode steps) into `out`.
std::string logits_command(const std::filesystem::path& ckpt, const std::filesystem::path& dir,
                           const std::string& out) {
  std::ofstream(dir / "tokens.json") << "[1, 5, 7, 9, 11, 13, 200, 17, 19, 23, 42, 99]";
  return "logits --model " + ckpt.string() + " --tokens " + (dir / "tokens.json").string() +
         " --prefill 5 --device cpu --out " + (dir / out).string();
}

TEST(TpProcessCli, LaunchedRanksGiveTheThreadedGroupsLogitsBitForBit) {
  const auto dir = scratch("launch");
  const auto ckpt = tiny_checkpoint(dir, "ckpt", 300, 2);
  const auto threads = run_inferlab(logits_command(ckpt, dir, "threads.npy") + " --tp 2");
  ASSERT_EQ(threads.exit_code, 0) << threads.err;
  const auto processes =
      run_inferlab(logits_command(ckpt, dir, "processes.npy") + " --tp 2 --tp-launch processes");
  ASSERT_EQ(processes.exit_code, 0) << processes.err;
  EXPECT_TRUE(processes.out.empty());  // the ranks write nothing on stdout
  EXPECT_TRUE(processes.err.empty()) << processes.err;
  const std::string a = read_file(dir / "threads.npy"), b = read_file(dir / "processes.npy");
  EXPECT_GT(a.size(), 12u * 300u * 4u);
  EXPECT_TRUE(a == b) << "the launched ranks' logits differ from the threaded group's";
  std::filesystem::remove_all(dir);
}

TEST(TpProcessCli, RanksStartedByHandJoinWithFlagsOrTheEnvironment) {
  const auto dir = scratch("by_hand");
  const auto ckpt = tiny_checkpoint(dir, "ckpt", 300, 2);
  ASSERT_EQ(run_inferlab(logits_command(ckpt, dir, "threads.npy") + " --tp 2").exit_code, 0);
  const int port = free_port();
  const std::string master = "127.0.0.1:" + std::to_string(port);
  // torchrun's variables for the worker; flags for rank 0, which starts after it.
  Child worker(
      {"tp-worker"}, dir / "worker.log",
      {"RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port)});
  const auto rank0 =
      run_inferlab(logits_command(ckpt, dir, "group.npy") + " --tp-world 2 --tp-master " + master);
  ASSERT_EQ(rank0.exit_code, 0) << rank0.err << "\n" << worker.log_text();
  ASSERT_TRUE(worker.wait_exit());
  EXPECT_EQ(worker.exit_code(), 0) << worker.log_text();  // rank 0 said goodbye
  EXPECT_NE(worker.log_text().find("rank 1 of 2 joined rank 0 at " + master), std::string::npos)
      << worker.log_text();
  EXPECT_TRUE(read_file(dir / "threads.npy") == read_file(dir / "group.npy"));
  std::filesystem::remove_all(dir);
}

TEST(TpProcessCli, AWorkerOfAnotherModelIsRefusedOnBothSides) {
  const auto dir = scratch("mismatch");
  const auto ckpt = tiny_checkpoint(dir, "ckpt", 300, 2);
  const auto other = tiny_checkpoint(dir, "other", 310, 2);
  const std::string master = "127.0.0.1:" + std::to_string(free_port());
  Child worker({"tp-worker", "--tp-rank", "1", "--tp-world", "2", "--tp-master", master, "--model",
                other.string()},
               dir / "worker.log");
  const auto rank0 =
      run_inferlab(logits_command(ckpt, dir, "x.npy") + " --tp-world 2 --tp-master " + master);
  EXPECT_EQ(rank0.exit_code, 2) << rank0.err;
  EXPECT_NE(rank0.err.find("inferlab: error: tensor-parallel rank 1 (pid"), std::string::npos)
      << rank0.err;
  EXPECT_NE(rank0.err.find("is not rank 0's"), std::string::npos) << rank0.err;
  ASSERT_TRUE(worker.wait_exit());
  EXPECT_EQ(worker.exit_code(), 2) << worker.log_text();
  std::filesystem::remove_all(dir);
}

TEST(TpProcessCli, NobodyJoiningIsAClearErrorNotAHang) {
  const auto dir = scratch("alone");
  const auto ckpt = tiny_checkpoint(dir, "ckpt", 300, 2);
  const std::string master = "127.0.0.1:" + std::to_string(free_port());
  const auto rank0 = run_inferlab(logits_command(ckpt, dir, "x.npy") + " --tp-world 2 " +
                                  "--tp-master " + master + " --tp-timeout 1");
  EXPECT_EQ(rank0.exit_code, 2);
  EXPECT_NE(rank0.err.find("tensor-parallel rank 1 of 2 did not join at " + master + " within 1 s"),
            std::string::npos)
      << rank0.err;
  const auto worker =
      run_inferlab("tp-worker --tp-rank 1 --tp-world 2 --tp-master " + master + " --tp-timeout 1");
  EXPECT_EQ(worker.exit_code, 2);
  EXPECT_NE(worker.err.find("no rank 0 answered at " + master), std::string::npos) << worker.err;
  std::filesystem::remove_all(dir);
}

TEST(TpProcessCli, BadFlagsAreExitTwo) {
  const auto dir = scratch("bad");
  const auto ckpt = tiny_checkpoint(dir, "ckpt", 300, 2);
  const std::string cmd = logits_command(ckpt, dir, "x.npy");
  testing::expect_refused({
      cmd + " --tp-world 2 --tp-rank 2 --tp-master 127.0.0.1:1",   // rank ≥ world
      cmd + " --tp-world 2 --tp-rank -1 --tp-master 127.0.0.1:1",  // negative
      cmd + " --tp-world 2 --tp-rank 1 --tp-master 127.0.0.1:1",   // a worker: tp-worker
      cmd + " --tp-world 2 --tp-master localhost",                 // no port
      cmd + " --tp-world 2 --tp-master localhost:",
      cmd + " --tp-world 2 --tp-master :29500",
      cmd + " --tp-world 2 --tp-master host:70000",
      cmd + " --tp-world 2",  // nowhere to listen
      cmd + " --tp-world 1 --tp-master 127.0.0.1:1",
      cmd + " --tp 4 --tp-world 2 --tp-master 127.0.0.1:1",
      cmd + " --tp-rank 0",            // without --tp-world
      cmd + " --tp-launch processes",  // one rank
      cmd + " --tp 2 --tp-launch fibers",
      cmd + " --tp 3 --tp-launch processes",  // 4 heads do not split 3 ways
      cmd + " --tp 2 --tp-launch processes --tp-world 2 --tp-master 127.0.0.1:1",
      cmd + " --tp 2 --tp-launch processes --tp-timeout 0",
      "tp-worker --tp-world 2 --tp-master 127.0.0.1:1",  // no rank
      "tp-worker --tp-rank 0 --tp-world 2 --tp-master 127.0.0.1:1",
      "tp-worker --tp-rank 2 --tp-world 2 --tp-master 127.0.0.1:1",
      "tp-worker --tp-rank -3 --tp-world 2 --tp-master 127.0.0.1:1",
      "tp-worker --tp-rank 1 --tp-world 2 --tp-master 127.0.0.1",
      "tp-worker --tp-rank 1 --tp-world 2 --tp-master 127.0.0.1:port",
  });
  // A stray WORLD_SIZE does not make a one-process run wait for a group.
  const auto stray = testing::run_command("WORLD_SIZE=2 RANK=1 MASTER_ADDR=x MASTER_PORT=1 " +
                                          testing::inferlab_binary() + " " + cmd);
  EXPECT_EQ(stray.exit_code, 0) << stray.err;
  std::filesystem::remove_all(dir);
}

// The server as rank 0 of 2 processes (it needs a tokenizer: the Llama 3 one, fetched).
std::filesystem::path server_checkpoint(const std::filesystem::path& dir) {
  std::ofstream(dir / "config.json") << testing::tiny_llama_config(128256, 512).dump();
  const auto init = run_inferlab("init-weights --model " + (dir / "config.json").string() +
                                 " --out " + (dir / "ckpt").string() + " --seed 1");
  EXPECT_EQ(init.exit_code, 0) << init.err;
  return dir / "ckpt";
}

TEST(TpProcessCli, AKilledRankStopsTheServerWithAnErrorNamingIt) {
  if (!testing::have_llama3_tokenizer()) GTEST_SKIP() << "Llama 3 tokenizer not fetched";
  const auto dir = scratch("kill_worker");
  const auto ckpt = server_checkpoint(dir);
  testing::ServerProcess server({"--model", ckpt.string(), "--device", "cpu", "--port", "0",
                                 "--kv-tokens", "2048", "--tp", "2", "--tp-launch", "processes"},
                                dir / "server.log");
  const int port = server.wait_for_port();
  ASSERT_GT(port, 0) << server.log_text();
  const std::vector<pid_t> workers = children_of(server.pid());
  ASSERT_EQ(workers.size(), 1u) << server.log_text();
  // A long stream; the worker is killed once its first chunk is here.
  testing::LongStream streamed(port, 400);
  ASSERT_TRUE(streamed.started(std::chrono::seconds(60)));
  kill(workers[0], SIGKILL);
  // Exits rather than hangs: the engine failure path (exit 1, a supervisor restarts it).
  ASSERT_TRUE(server.wait_exit(std::chrono::seconds(30))) << server.log_text();
  streamed.finish();
  EXPECT_TRUE(server.exited_with(1)) << server.how_it_ended() << "\n" << server.log_text();
  const std::string log = server.log_text();
  const std::string named = "tensor-parallel rank 1 (pid " + std::to_string(workers[0]);
  EXPECT_NE(log.find("inferlab: error: run failed: the engine failed: " + named), std::string::npos)
      << log;
  EXPECT_NE(log.find("disconnected"), std::string::npos) << log;
  EXPECT_NE(log.find("(killed by signal 9)"), std::string::npos) << log;
  std::filesystem::remove_all(dir);
}

TEST(TpProcessCli, RankZeroGoneEndsTheWorkers) {
  if (!testing::have_llama3_tokenizer()) GTEST_SKIP() << "Llama 3 tokenizer not fetched";
  const auto dir = scratch("kill_rank0");
  const auto ckpt = server_checkpoint(dir);
  const std::string master = "127.0.0.1:" + std::to_string(free_port());
  Child worker({"tp-worker", "--tp-rank", "1", "--tp-world", "2", "--tp-master", master},
               dir / "worker.log");
  {
    testing::ServerProcess server({"--model", ckpt.string(), "--device", "cpu", "--port", "0",
                                   "--kv-tokens", "2048", "--tp-world", "2", "--tp-master", master},
                                  dir / "server.log");
    ASSERT_GT(server.wait_for_port(), 0) << server.log_text() << worker.log_text();
    server.signal(SIGKILL);
    ASSERT_TRUE(server.wait_exit());
  }
  ASSERT_TRUE(worker.wait_exit()) << "the worker outlived rank 0\n" << worker.log_text();
  EXPECT_EQ(worker.exit_code(), 1) << worker.log_text();
  EXPECT_NE(worker.log_text().find("inferlab: error: run failed: tensor-parallel rank 0 (pid"),
            std::string::npos)
      << worker.log_text();
  EXPECT_NE(worker.log_text().find("disconnected"), std::string::npos) << worker.log_text();

  // A launched rank goes with rank 0 (PR_SET_PDEATHSIG) when rank 0 is killed.
  testing::ServerProcess launcher({"--model", ckpt.string(), "--device", "cpu", "--port", "0",
                                   "--kv-tokens", "2048", "--tp", "2", "--tp-launch", "processes"},
                                  dir / "launcher.log");
  ASSERT_GT(launcher.wait_for_port(), 0) << launcher.log_text();
  const std::vector<pid_t> launched = children_of(launcher.pid());
  ASSERT_EQ(launched.size(), 1u);
  launcher.signal(SIGKILL);
  ASSERT_TRUE(launcher.wait_exit());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  // Re-parented when rank 0 goes, then ended: gone from /proc, or a zombie of its new parent.
  auto alive = [&] {
    std::ifstream stat("/proc/" + std::to_string(launched[0]) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');
    return close != std::string::npos && text.size() > close + 2 && text[close + 2] != 'Z';
  };
  while (alive() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(alive()) << "a launched rank outlived rank 0";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace inferlab
