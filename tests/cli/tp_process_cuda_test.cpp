// Tensor parallelism with a process per GPU, through the real binary on a machine of 2 or more
// GPUs (skipped elsewhere): each rank takes its own GPU, NCCL's communicator is made from rank
// 0's unique id sent over the TCP rendezvous, and the group's logits are the threaded group's
// (one process, the one-shot all-reduce) within bf16 rounding. A rank killed in the middle of a
// stream stops rank 0 with an error naming it within seconds, although rank 0 may be waiting in
// an NCCL collective for it when it dies. On a machine without GPUs these tests skip; the same
// paths on the CPU reference are tp_process_cli_test.cpp's. A build without CUDA compiles none
// of it.
#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/cuda_backend.hpp"
#include "npy_file.hpp"
#include "server_process.hpp"
#include "test_support.hpp"
#include "tp_process_support.hpp"

namespace inferlab {
namespace {

using testing::children_of;
using testing::free_port;
using testing::run_inferlab;
using testing::scratch;

int gpus() {
  int count = 0;
  if (!engine::cuda_device_available() || cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

#define REQUIRE_GPUS(n) \
  if (gpus() < (n)) GTEST_SKIP() << "fewer than " << (n) << " CUDA GPUs"

// A small Llama the CUDA kernels take (head_dim 64): 4 query and 4 KV heads split 2 or 4 ways.
std::filesystem::path gpu_checkpoint(const std::filesystem::path& dir, int64_t vocab,
                                     const std::string& tokenizer) {
  nlohmann::json config = testing::tiny_llama_config(vocab, 512);
  config["hidden_size"] = 256;
  config["intermediate_size"] = 512;
  config["num_attention_heads"] = 4;
  config["num_key_value_heads"] = 4;
  config["head_dim"] = 64;
  config["tie_word_embeddings"] = false;
  std::ofstream(dir / "config.json") << config.dump();
  const auto init = run_inferlab("init-weights --model " + (dir / "config.json").string() +
                                 " --out " + (dir / "ckpt").string() + " --seed 3" + tokenizer);
  EXPECT_EQ(init.exit_code, 0) << init.err;
  return dir / "ckpt";
}

// Teacher-forced logits on the GPUs of 24 tokens (a prefill of 9, then decode steps).
std::string logits_command(const std::filesystem::path& ckpt, const std::filesystem::path& dir,
                           const std::string& out) {
  std::ofstream(dir / "tokens.json") << "[1, 5, 7, 9, 11, 13, 200, 17, 19, 23, 42, 99, 3, 8, 600, "
                                        "21, 2, 4, 6, 10, 12, 14, 16, 18]";
  return "logits --model " + ckpt.string() + " --tokens " + (dir / "tokens.json").string() +
         " --prefill 9 --device cuda --out " + (dir / out).string();
}

// Every row of `b` against `a`: cosine ≥ 0.9999 and no logit off by more than 2% of the row's
// largest (bf16 keeps 8 bits; the groups add their partial sums in different orders).
void expect_same_logits(const std::filesystem::path& a_path, const std::filesystem::path& b_path) {
  int64_t rows = 0, cols = 0, rows_b = 0, cols_b = 0;
  const std::vector<float> a = testing::read_npy(a_path, rows, cols);
  const std::vector<float> b = testing::read_npy(b_path, rows_b, cols_b);
  ASSERT_EQ(rows, rows_b);
  ASSERT_EQ(cols, cols_b);
  ASSERT_EQ(rows, 24);
  for (int64_t r = 0; r < rows; ++r) {
    double dot = 0, aa = 0, bb = 0, largest = 0, worst = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double x = a[r * cols + c], y = b[r * cols + c];
      dot += x * y;
      aa += x * x;
      bb += y * y;
      largest = std::max(largest, std::abs(x));
      worst = std::max(worst, std::abs(x - y));
    }
    EXPECT_GE(dot / std::sqrt(aa * bb), 0.9999) << "row " << r;
    EXPECT_LE(worst, 0.02 * largest) << "row " << r;
  }
}

TEST(TpProcessCuda, LaunchedRanksMatchTheThreadedGroup) {
  REQUIRE_GPUS(2);
  const auto dir = scratch("cuda_launch");
  const auto ckpt = gpu_checkpoint(dir, 1000, " --tokenizer none");
  const auto one = run_inferlab(logits_command(ckpt, dir, "one.npy"));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  for (int ranks : {2, 4}) {
    if (gpus() < ranks) continue;
    const std::string tp = " --tp " + std::to_string(ranks);
    const std::string threads = "threads" + std::to_string(ranks) + ".npy";
    const std::string processes = "processes" + std::to_string(ranks) + ".npy";
    const auto threaded = run_inferlab(logits_command(ckpt, dir, threads) + tp);
    ASSERT_EQ(threaded.exit_code, 0) << threaded.err;
    const auto launched =
        run_inferlab(logits_command(ckpt, dir, processes) + tp + " --tp-launch processes");
    ASSERT_EQ(launched.exit_code, 0) << launched.err;
    SCOPED_TRACE("TP " + std::to_string(ranks));
    expect_same_logits(dir / threads, dir / processes);
    expect_same_logits(dir / "one.npy", dir / processes);
  }
  std::filesystem::remove_all(dir);
}

TEST(TpProcessCuda, ARankStartedByHandTakesItsLocalGpu) {
  REQUIRE_GPUS(2);
  const auto dir = scratch("cuda_by_hand");
  const auto ckpt = gpu_checkpoint(dir, 1000, " --tokenizer none");
  ASSERT_EQ(run_inferlab(logits_command(ckpt, dir, "threads.npy") + " --tp 2").exit_code, 0);
  const int port = free_port();
  // torchrun's variables, as on a second host: LOCAL_RANK names the GPU.
  testing::InferlabProcess worker({"tp-worker"}, dir / "worker.log",
                                  {"RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
                                   "MASTER_PORT=" + std::to_string(port), "LOCAL_RANK=1"});
  const auto rank0 = run_inferlab(logits_command(ckpt, dir, "group.npy") +
                                  " --tp-world 2 --tp-master 127.0.0.1:" + std::to_string(port));
  ASSERT_EQ(rank0.exit_code, 0) << rank0.err << "\n" << worker.log_text();
  ASSERT_TRUE(worker.wait_exit());
  EXPECT_EQ(worker.exit_code(), 0) << worker.log_text();
  expect_same_logits(dir / "threads.npy", dir / "group.npy");
  std::filesystem::remove_all(dir);
}

TEST(TpProcessCuda, AKilledRankStopsTheServerWithAnErrorNamingIt) {
  REQUIRE_GPUS(2);
  if (!testing::have_llama3_tokenizer()) GTEST_SKIP() << "Llama 3 tokenizer not fetched";
  const auto dir = scratch("cuda_kill_worker");
  const auto ckpt = gpu_checkpoint(dir, 128256, "");
  testing::ServerProcess server({"--model", ckpt.string(), "--device", "cuda", "--port", "0",
                                 "--kv-tokens", "4096", "--tp", "2", "--tp-launch", "processes"},
                                dir / "server.log");
  const int port = server.wait_for_port();
  ASSERT_GT(port, 0) << server.log_text();
  const std::vector<pid_t> workers = children_of(server.pid());
  ASSERT_EQ(workers.size(), 1u) << server.log_text();
  testing::LongStream streamed(port, 3000);
  ASSERT_TRUE(streamed.started(std::chrono::seconds(60)));
  const auto killed_at = std::chrono::steady_clock::now();
  kill(workers[0], SIGKILL);
  ASSERT_TRUE(server.wait_exit(std::chrono::seconds(30))) << server.log_text();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  std::printf("rank 0 exited %.2f s after rank 1 was killed\n", seconds);
  streamed.finish();
  EXPECT_TRUE(server.exited_with(1)) << server.how_it_ended() << "\n" << server.log_text();
  const std::string log = server.log_text();
  EXPECT_NE(log.find("tensor-parallel rank 1 (pid " + std::to_string(workers[0])),
            std::string::npos)
      << log;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace inferlab
#endif  // INFERLAB_ENGINE_HAVE_CUDA
