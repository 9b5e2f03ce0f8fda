// The engine's number-format switches and `inferlab quantize` end to end on the CPU reference
// with a tiny checkpoint: a GPTQ checkpoint written by `quantize` computes what the bf16 one
// quantized while loading computes; `bench --profile` writes the fit's file; bad switches are
// refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
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

// The logits of a .npy file written by `logits` (float32 after the header).
std::vector<float> npy_floats(const std::filesystem::path& path) {
  const std::string bytes = file_bytes(path);
  const auto header = static_cast<size_t>(static_cast<unsigned char>(bytes[8])) +
                      256 * static_cast<size_t>(static_cast<unsigned char>(bytes[9]));
  std::vector<float> values((bytes.size() - 10 - header) / 4);
  std::memcpy(values.data(), bytes.data() + 10 + header, values.size() * 4);
  return values;
}

double mean_squared_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
  return sum / static_cast<double>(a.size());
}

// GPTQ against calibration inputs: the int4 checkpoint's logits on the calibration sequence are
// closer to the bf16 model's than round to nearest's (GPTQ minimises each layer's output error on
// those inputs), and the file is a GPTQ checkpoint like the other. Bad calibration input is exit 2.
TEST(EngineQuantCli, GptqCalibrationCutsRoundToNearestsError) {
  REQUIRE_TOKENIZER();
  TinyCheckpoint tiny{"gptq_cli", 4096};
  std::string ids = "[";
  for (int i = 0; i < 256; ++i) ids += (i ? ", " : "") + std::to_string((i * 37 + 11) % 300);
  std::ofstream(tiny.dir / "calib.json") << ids << "]";
  const std::string base = "quantize --model " + tiny.ckpt.string() +
                           " --weights int4 --group-size 32 --format json --out ";
  auto rtn = run_inferlab(base + (tiny.dir / "rtn").string());
  auto gptq = run_inferlab(base + (tiny.dir / "gptq").string() + " --calibration-ids " +
                           (tiny.dir / "calib.json").string() + " --calibration-window 128");
  ASSERT_EQ(rtn.exit_code, 0) << rtn.err;
  ASSERT_EQ(gptq.exit_code, 0) << gptq.err;
  const auto report = nlohmann::json::parse(gptq.out);
  EXPECT_EQ(report["method"], "gptq");
  EXPECT_EQ(report["calibration_tokens"].get<int>(), 256);
  EXPECT_EQ(nlohmann::json::parse(rtn.out)["method"], "round_to_nearest");
  EXPECT_EQ(report["quantized_modules"].get<int>(), 2 * 7);

  const std::string tokens =
      " --device cpu --tokens " + (tiny.dir / "calib.json").string() + " --out ";
  for (const char* name : {"ckpt", "rtn", "gptq"}) {
    auto r = run_inferlab("logits --model " + (tiny.dir / name).string() + tokens +
                          (tiny.dir / (std::string(name) + ".npy")).string());
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
  }
  const auto exact = npy_floats(tiny.dir / "ckpt.npy");
  const double rtn_error = mean_squared_difference(npy_floats(tiny.dir / "rtn.npy"), exact);
  const double gptq_error = mean_squared_difference(npy_floats(tiny.dir / "gptq.npy"), exact);
  std::cout << "logits MSE against bf16: round to nearest " << rtn_error << ", GPTQ " << gptq_error
            << "\n";
  EXPECT_LT(gptq_error, rtn_error);

  std::ofstream(tiny.dir / "empty.txt") << "";
  std::ofstream(tiny.dir / "past.json") << "[1, 2, 300]";
  testing::expect_refused(
      {base + (tiny.dir / "x").string() + " --calibration /nonexistent.txt",
       base + (tiny.dir / "x").string() + " --calibration " + (tiny.dir / "empty.txt").string(),
       base + (tiny.dir / "x").string() + " --calibration-ids " + (tiny.dir / "past.json").string(),
       base + (tiny.dir / "x").string() + " --calibration-ids " +
           (tiny.dir / "calib.json").string() + " --calibration-window 1",
       base + (tiny.dir / "x").string() + " --calibration-ids " +
           (tiny.dir / "calib.json").string() + " --damp 0",
       base + (tiny.dir / "x").string() + " --calibration-ids " +
           (tiny.dir / "calib.json").string() + " --calibration " +
           (tiny.dir / "empty.txt").string()});
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
    // The profiled pass: a decode point's after its 0 warmup and 2 timed passes, each a token
    // further; a prefill's at its own context.
    const int64_t context = p["context"].get<int64_t>();
    EXPECT_EQ(p["profiled_context"].get<int64_t>(),
              p["phase"] == "prefill" ? context : context + 2);
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
      g + " --weights int3", g + " --kv int4", g + " --activations fp8",
      g + " --activations int8",  // W8A8 needs --weights int8
      g + " --attention sdpa", g + " --fusion maybe", g + " --weights int4 --group-size 48",
      g + " --weights int4 --group-size 64",  // does not divide the tiny widths of 32
      "quantize" + m + " --out " + (tiny.dir / "x").string() + " --weights fp8",
      "quantize --model " + tiny.ckpt.string() + " --out " + tiny.ckpt.string(),
      "quantize --model nonexistent-model --out " + (tiny.dir / "y").string(),
      "bench" + m + " --profile --repeats 90",
      "bench" + m + " --profile --profile-grid huge",  // standard, long or large
  });
}

}  // namespace
}  // namespace inferlab
