// The engine's number-format switches and `inferlab quantize` end to end on the CPU reference
// with a tiny checkpoint: a GPTQ checkpoint written by `quantize` computes what the bf16 one
// quantized while loading computes; `bench --profile` writes the fit's file; bad switches are
// refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_support.hpp"
#include "tiny_checkpoint.hpp"

namespace inferlab {
namespace {

using testing::run_inferlab;
using testing::TinyCheckpoint;

std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(EngineQuantCli, QuantizedCheckpointComputesWhatQuantizingWhileLoadingComputes) {
  REQUIRE_TOKENIZER();
  TinyCheckpoint tiny{"quant_cli", 4096};
  const auto gptq = tiny.dir / "gptq";
  auto q = run_inferlab("quantize --model " + tiny.ckpt.string() + " --out " + gptq.string() +
                        " --weights int4 --group-size 32 --format json");
  ASSERT_EQ(q.exit_code, 0) << q.err;
  const auto report = nlohmann::json::parse(q.out);
  EXPECT_EQ(report["quantized_modules"].get<int>(), 2 * 7);
  EXPECT_TRUE(std::filesystem::exists(gptq / "tokenizer.json"));
  const auto config = nlohmann::json::parse(file_bytes(gptq / "config.json"));
  EXPECT_EQ(config["quantization_config"]["quant_method"], "gptq");
  EXPECT_EQ(config["quantization_config"]["bits"], 4);
  EXPECT_EQ(config["quantization_config"]["group_size"], 32);

  std::ofstream(tiny.dir / "ids.json") << "[5, 17, 299, 0, 42, 42, 7, 128]";
  const std::string tokens = " --device cpu --tokens " + (tiny.dir / "ids.json").string();
  // The LM head stays bf16 in the GPTQ file; keep it bf16 on both sides by quantizing it from
  // the same bits either way (--weights int4 quantizes it while loading in both runs).
  auto from_gptq = run_inferlab("logits --model " + gptq.string() + tokens + " --out " +
                                (tiny.dir / "a.npy").string());
  auto while_loading =
      run_inferlab("logits --model " + tiny.ckpt.string() + tokens +
                   " --weights int4 --group-size 32 --out " + (tiny.dir / "b.npy").string());
  ASSERT_EQ(from_gptq.exit_code, 0) << from_gptq.err;
  ASSERT_EQ(while_loading.exit_code, 0) << while_loading.err;
  EXPECT_EQ(file_bytes(tiny.dir / "a.npy"), file_bytes(tiny.dir / "b.npy"));
  auto bf16 = run_inferlab("logits --model " + tiny.ckpt.string() + tokens + " --out " +
                           (tiny.dir / "c.npy").string());
  ASSERT_EQ(bf16.exit_code, 0) << bf16.err;
  EXPECT_NE(file_bytes(tiny.dir / "a.npy"), file_bytes(tiny.dir / "c.npy"));
}

TEST(EngineQuantCli, ProfileWritesTheFitsFile) {
  REQUIRE_TOKENIZER();
  TinyCheckpoint tiny{"quant_cli", 4096};
  auto r = run_inferlab("bench --profile --model " + tiny.ckpt.string() +
                        " --device cpu --repeats 2 --warmup 0 --weights int8 --kv fp8 "
                        "--format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kind"], "engine_profile");
  EXPECT_EQ(j["switches"]["weights"], "int8");
  EXPECT_EQ(j["switches"]["kv"], "fp8");
  EXPECT_EQ(j["switches"]["fusion"], "on");
  // The CPU's 8192-token cache holds the prefill points and the decode points up to 8 × 1024.
  int prefill = 0, decode = 0, holdout = 0;
  for (const auto& p : j["points"]) {
    (p["phase"] == "prefill" ? prefill : decode) += 1;
    holdout += p["split"] == "holdout";
    EXPECT_GT(p["step_ms"].get<double>(), 0.0);
    EXPECT_EQ(p["repeats"].get<int>(), 2);
  }
  EXPECT_EQ(prefill, 15);
  EXPECT_GE(decode, 7);
  EXPECT_EQ(holdout, static_cast<int>(j["points"].size()) / 3);
}

TEST(EngineQuantCli, BadSwitchesAreRefused) {
  REQUIRE_TOKENIZER();
  TinyCheckpoint tiny{"quant_cli", 4096};
  const std::string m = " --model " + tiny.ckpt.string() + " --device cpu";
  const std::string g = "generate" + m + " --prompt hi --max-tokens 2";
  testing::expect_refused({
      g + " --weights int3",
      g + " --kv int4",
      g + " --activations fp8",
      g + " --activations int8",  // W8A8 needs --weights int8
      g + " --attention sdpa",
      g + " --fusion maybe",
      g + " --weights int4 --group-size 48",
      g + " --weights int4 --group-size 64",  // does not divide the tiny widths of 32
      "quantize" + m + " --out " + (tiny.dir / "x").string() + " --weights fp8",
      "quantize --model " + tiny.ckpt.string() + " --out " + tiny.ckpt.string(),
      "quantize --model nonexistent-model --out " + (tiny.dir / "y").string(),
      "bench" + m + " --profile --repeats 90",
  });
}

}  // namespace
}  // namespace inferlab
