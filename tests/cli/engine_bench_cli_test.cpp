// `bench` and `logits` end to end on the CPU reference backend with a tiny checkpoint: the
// fields scripts read, teacher-forced decode logits equal to one prefill's, and bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "npy_file.hpp"
#include "test_support.hpp"
#include "tiny_checkpoint.hpp"

namespace inferlab {
namespace {

using testing::read_npy;
using testing::run_inferlab;
using testing::TinyCheckpoint;

// Sequences that spill into a second block: 4 × 20 tokens take 4 × 2 blocks of 16, more than
// 80 tokens' 5 blocks (the CPU's cache holds what bench sizes it for; it used to refuse this).
TEST(EngineBenchCli, SequencesOfPartBlocksFitTheCacheBenchSizes) {
  REQUIRE_TOKENIZER();
  TinyCheckpoint tiny{"bench_cli_blocks", 64};
  auto r = run_inferlab("bench --model " + tiny.ckpt.string() +
                        " --device cpu --batch 4 --input 16 --output 4 --repeats 1 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["memory"]["kv_cache_tokens"].get<int>(), 128);
}

TEST(EngineBenchCli, BenchOnTheCpuReportsPredictsFieldsAndTheSpread) {
  REQUIRE_TOKENIZER();
  TinyCheckpoint tiny{"bench_cli", 64};
  auto r = run_inferlab("bench --model " + tiny.ckpt.string() +
                        " --device cpu --batch 2 --input 8 --output 3 --repeats 2 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  for (const char* field : {"prefill_ms", "ttft_ms", "tpot_ms", "e2e_ms", "decode_tokens_per_s"}) {
    EXPECT_GT(j[field].get<double>(), 0.0) << field;
  }
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["timing"], "host wall clock");
  EXPECT_EQ(j["spread"]["prefill"]["samples"].get<int>(), 2);
  EXPECT_EQ(j["spread"]["decode_step"]["samples"].get<int>(), 2);  // output − 1 steps
  // e2e = ttft + (output − 1) × tpot; tokens/s = batch / tpot.
  EXPECT_NEAR(j["e2e_ms"].get<double>(),
              j["ttft_ms"].get<double>() + 2 * j["tpot_ms"].get<double>(), 1e-9);
  EXPECT_NEAR(j["decode_tokens_per_s"].get<double>(), 2 / (j["tpot_ms"].get<double>() * 1e-3),
              1e-6 * j["decode_tokens_per_s"].get<double>());
  // 2 sequences × 11 tokens → 22 tokens, one 16-token block each: 32 slots; fp32 on the CPU:
  // 2 (K, V) × 2 layers × 2 KV heads × 8 dims × 4 bytes = 256 bytes per token.
  EXPECT_EQ(j["memory"]["kv_cache_tokens"].get<int>(), 32);
  EXPECT_EQ(j["memory"]["kv_bytes_per_token"].get<int>(), 256);
  EXPECT_FALSE(j.contains("predicted"));

  auto compared = run_inferlab("bench --model " + tiny.ckpt.string() +
                               " --device cpu --batch 1 --input 4 --output 2 --repeats 1 "
                               "--compare --hardware h100-sxm --format json");
  ASSERT_EQ(compared.exit_code, 0) << compared.err;
  auto c = nlohmann::json::parse(compared.out);
  EXPECT_EQ(c["predicted"]["framework"], "inferlab");
  EXPECT_GT(c["predicted"]["tpot_ms"].get<double>(), 0.0);
  EXPECT_NEAR(c["measured_over_predicted"]["tpot"].get<double>(),
              c["tpot_ms"].get<double>() / c["predicted"]["tpot_ms"].get<double>(), 1e-9);

  // Under --tp the comparison is with the prediction of that split, as `predict --tp` gives it.
  auto split = run_inferlab("bench --model " + tiny.ckpt.string() +
                            " --device cpu --tp 2 --batch 1 --input 4 --output 2 --repeats 1 "
                            "--compare --hardware h100-sxm --format json");
  ASSERT_EQ(split.exit_code, 0) << split.err;
  auto predicted = run_inferlab("predict --model " + (tiny.ckpt / "config.json").string() +
                                " --hardware h100-sxm --framework inferlab --tp 2 --batch 1 "
                                "--input 4 --output 2 --format json");
  ASSERT_EQ(predicted.exit_code, 0) << predicted.err;
  EXPECT_EQ(nlohmann::json::parse(split.out)["tp"], 2);
  EXPECT_EQ(c["tp"], 1);
  const double split_tpot_ms = nlohmann::json::parse(split.out)["predicted"]["tpot_ms"];
  EXPECT_DOUBLE_EQ(split_tpot_ms, nlohmann::json::parse(predicted.out)["tpot_ms"].get<double>());
  EXPECT_NE(split_tpot_ms, c["predicted"]["tpot_ms"].get<double>());
}

TEST(EngineBenchCli, TeacherForcedDecodeLogitsEqualOnePrefillsLogits) {
  REQUIRE_TOKENIZER();
  TinyCheckpoint tiny{"bench_cli", 64};
  std::ofstream(tiny.dir / "ids.json") << "[5, 17, 299, 0, 42, 42, 7, 128]";
  auto base = "logits --model " + tiny.ckpt.string() + " --device cpu --tokens " +
              (tiny.dir / "ids.json").string();
  auto a = run_inferlab(base + " --out " + (tiny.dir / "all.npy").string());
  auto b = run_inferlab(base + " --prefill 3 --out " + (tiny.dir / "split.npy").string());
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_TRUE(a.out.empty());
  int64_t rows = 0, cols = 0, rows2 = 0, cols2 = 0;
  auto all = read_npy(tiny.dir / "all.npy", rows, cols);
  auto split = read_npy(tiny.dir / "split.npy", rows2, cols2);
  EXPECT_EQ(rows, 8);
  EXPECT_EQ(cols, 300);
  ASSERT_EQ(all.size(), split.size());
  // The same fp32 arithmetic either way (the attention reads the cache in position order).
  for (size_t i = 0; i < all.size(); ++i) ASSERT_NEAR(all[i], split[i], 1e-5) << i;
}

// `--framework inferlab` prices the engine's kernel list: vLLM's fused list plus the gather of the
// LM head's rows (a second "embedding" call), with fp32 logits; without engine costs for the GPU
// it is priced by today's model and says that its kernel costs were fitted on PyTorch's.
TEST(EngineBenchCli, PredictFrameworkInferlabPricesTheEnginesKernels) {
  const std::string base =
      "predict --model llama-3.2-1b --batch 1 --input 512 --output 8 --format json";
  // Unfused: the engine's list is vLLM's with RoPE and the KV write as one more kernel.
  auto engine = run_inferlab(base + " --framework inferlab --engine-costs none --fusion off");
  auto vllm = run_inferlab(base + " --framework vllm");
  ASSERT_EQ(engine.exit_code, 0) << engine.err;
  ASSERT_EQ(vllm.exit_code, 0) << vllm.err;
  auto e = nlohmann::json::parse(engine.out), v = nlohmann::json::parse(vllm.out);
  for (int phase = 0; phase < 2; ++phase) {
    const auto& ep = e["phases"][phase];
    const auto& vp = v["phases"][phase];
    EXPECT_EQ(ep["kernels"].get<int>(), vp["kernels"].get<int>() + 1);
    EXPECT_EQ(ep["ops"].size(), vp["ops"].size() + 1);
    EXPECT_NEAR(ep["gpu_ms"].get<double>() / vp["gpu_ms"].get<double>(), 1.0, 0.02);
  }
  bool noted = false;
  for (const auto& note : e["unvalidated"]) {
    noted |= note.get<std::string>().find("inferlab kernel list") != std::string::npos;
  }
  EXPECT_TRUE(noted) << e["unvalidated"].dump();

  // The default is the engine's own: fusion on, which folds each layer's two norms and its
  // SiLU x mul into the decode GEMVs, and at one row RoPE and the KV write into the QKV GEMV's
  // epilogue (4 kernels a layer fewer; 16 layers).
  auto fused = run_inferlab(base + " --framework inferlab --engine-costs none");
  ASSERT_EQ(fused.exit_code, 0) << fused.err;
  auto f = nlohmann::json::parse(fused.out);
  EXPECT_EQ(e["phases"][1]["kernels"].get<int>() - f["phases"][1]["kernels"].get<int>(), 4 * 16);
  EXPECT_EQ(e["phases"][0]["kernels"].get<int>(), f["phases"][0]["kernels"].get<int>());
}

TEST(EngineBenchCli, BadInputIsExitTwo) {
  REQUIRE_TOKENIZER();
  TinyCheckpoint tiny{"bench_cli", 64};
  std::ofstream(tiny.dir / "bad.json") << "{\"tokens\": [1, -2]}";
  std::ofstream(tiny.dir / "ok.json") << "[1, 2, 3]";
  const std::string m = " --model " + tiny.ckpt.string() + " --device cpu";
  const std::vector<std::string> cases = {
      "bench" + m + " --batch 0",
      "bench" + m + " --input -5",
      "bench" + m + " --input 60 --output 10",  // past the 64-token context
      "bench" + m + " --compare",               // which hardware is 'cpu'?
      "bench" + m + " --device tpu",
      "bench" + m + " --gpu-memory-utilization 1.5",
      "bench" + m + " --ablation",  // the staircase is of the CUDA backend's switches
      "generate" + m + " --prompt hi --gpu-memory-utilization 0",
      "logits" + m + " --tokens " + (tiny.dir / "bad.json").string() + " --out /tmp/x.npy",
      "logits" + m + " --tokens /nonexistent.json --out /tmp/x.npy",
      "logits" + m + " --tokens " + (tiny.dir / "ok.json").string() +
          " --prefill 9 --out /tmp/x.npy",
      "logits" + m + " --tokens " + (tiny.dir / "ok.json").string() + " --out /nonexistent/x.npy",
  };
  testing::expect_refused(cases);
}

}  // namespace
}  // namespace inferlab
