// The engine's commands end to end on the CPU reference backend: init-weights writes a
// checkpoint, tokenize and generate read it, bad input is exit 2 with nothing on stdout.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/cuda_backend.hpp"
#include "test_support.hpp"

namespace inferlab {
namespace {

using testing::run_inferlab;

std::filesystem::path scratch(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("inferlab_engine_cli_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// A two-layer Llama with the Llama 3 vocabulary: small enough for CI, real enough to take the
// real tokenizer's ids.
std::filesystem::path tiny_llama3_config(const std::filesystem::path& dir) {
  nlohmann::json config = {{"architectures", {"LlamaForCausalLM"}},
                           {"model_type", "llama"},
                           {"hidden_size", 64},
                           {"intermediate_size", 128},
                           {"num_hidden_layers", 2},
                           {"num_attention_heads", 4},
                           {"num_key_value_heads", 2},
                           {"head_dim", 16},
                           {"vocab_size", 128256},
                           {"max_position_embeddings", 256},
                           {"rms_norm_eps", 1e-5},
                           {"rope_theta", 500000.0},
                           {"tie_word_embeddings", true},
                           {"bos_token_id", 128000},
                           {"eos_token_id", 128001},
                           {"torch_dtype", "bfloat16"}};
  auto path = dir / "tiny-llama3.json";
  std::ofstream(path) << config.dump(2);
  return path;
}

TEST(EngineCli, TokenizeGivesHuggingFaceIdsInInputOrder) {
  if (!testing::have_llama3_tokenizer()) GTEST_SKIP() << "Llama 3 tokenizer not fetched";
  auto dir = scratch("tokenize");
  std::ofstream(dir / "in.jsonl") << "{\"text\": \"Hello, world\"}\n\n{\"text\": \"Hello\"}\n";
  auto r = run_inferlab("tokenize --input " + (dir / "in.jsonl").string() + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto tokens = nlohmann::json::parse(r.out)["tokens"];
  EXPECT_EQ(tokens, nlohmann::json::parse("[[9906, 11, 1917], [9906]]"));
  auto bos = run_inferlab("tokenize --text Hello --add-bos --format json");
  EXPECT_EQ(nlohmann::json::parse(bos.out)["tokens"], nlohmann::json::parse("[[128000, 9906]]"));
  std::filesystem::remove_all(dir);
}

TEST(EngineCli, InitWeightsThenGenerateIsDeterministic) {
  if (!testing::have_llama3_tokenizer()) GTEST_SKIP() << "Llama 3 tokenizer not fetched";
  auto dir = scratch("generate");
  auto ckpt = dir / "ckpt";
  auto init = run_inferlab("init-weights --model " + tiny_llama3_config(dir).string() + " --out " +
                           ckpt.string() + " --seed 3 --format json");
  ASSERT_EQ(init.exit_code, 0) << init.err;
  auto written = nlohmann::json::parse(init.out);
  // Embedding 128256 x 64 (tied) + 2 layers of (q 64x64, k and v 32x64, o 64x64, gate/up
  // 128x64, down 64x128, two norms of 64) + the final norm.
  EXPECT_EQ(written["parameters"].get<int64_t>(),
            128256 * 64 + 2 * (64 * 64 + 2 * 32 * 64 + 64 * 64 + 3 * 128 * 64 + 2 * 64) + 64);
  for (const char* file : {"config.json", "model.safetensors", "tokenizer.json"})
    EXPECT_TRUE(std::filesystem::exists(ckpt / file)) << file;
  std::string cmd = "generate --model " + ckpt.string() +
                    " --prompt 'What is the tallest mountain?' --max-tokens 6 --temperature 0.8 "
                    "--top-p 0.9 --seed 7 --format json";
  auto first = run_inferlab(cmd);
  auto second = run_inferlab(cmd);
  // Warm-up runs of the same request first leave the timed run's tokens as they were.
  auto warmed = run_inferlab(cmd + " --warmup-runs 2");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_EQ(warmed.exit_code, 0) << warmed.err;
  auto a = nlohmann::json::parse(first.out), b = nlohmann::json::parse(second.out);
  EXPECT_EQ(a["tokens"], b["tokens"]);
  EXPECT_EQ(a["text"], b["text"]);
  EXPECT_EQ(nlohmann::json::parse(warmed.out)["tokens"], a["tokens"]);
  EXPECT_EQ(a["prompt_tokens"].get<int>(), 7);  // BOS, What, is, the, tallest, mountain, ?
  EXPECT_LE(a["tokens"].size(), 6u);
  for (const char* field : {"ttft_ms", "tpot_ms", "e2e_ms"}) EXPECT_GE(a[field].get<double>(), 0.0);
  std::filesystem::remove_all(dir);
}

TEST(EngineCli, TensorParallelGenerateGivesTheSingleDevicesTokens) {
  if (!testing::have_llama3_tokenizer()) GTEST_SKIP() << "Llama 3 tokenizer not fetched";
  auto dir = scratch("tp");
  auto ckpt = dir / "ckpt";
  auto init = run_inferlab("init-weights --model " + tiny_llama3_config(dir).string() + " --out " +
                           ckpt.string() + " --seed 5");
  ASSERT_EQ(init.exit_code, 0) << init.err;
  const std::string cmd = "generate --model " + ckpt.string() +
                          " --prompt 'Name three rivers' --max-tokens 8 --temperature 0 "
                          "--device cpu --format json";
  auto single = run_inferlab(cmd);
  auto sharded = run_inferlab(cmd + " --tp 2");
  ASSERT_EQ(single.exit_code, 0) << single.err;
  ASSERT_EQ(sharded.exit_code, 0) << sharded.err;
  EXPECT_EQ(nlohmann::json::parse(sharded.out)["tokens"],
            nlohmann::json::parse(single.out)["tokens"]);
  // 4 heads and 2 KV heads do not split 3 or 4 ways, on the CPU or across GPUs.
  testing::expect_refused(
      {cmd + " --tp 3", cmd + " --tp 4", cmd + " --tp 0", cmd + " --tp 99",
       "generate --model " + ckpt.string() + " --prompt hi --tp 4 --device cuda"});
  auto message = run_inferlab(cmd + " --tp 4");
  EXPECT_NE(message.err.find("2 KV heads, which do not split 4 ways"), std::string::npos)
      << message.err;
  std::filesystem::remove_all(dir);
}

TEST(EngineCli, BadInputIsExitTwoWithNothingOnStdout) {
  auto dir = scratch("bad");
  std::ofstream(dir / "bad.jsonl") << "{\"text\": \"ok\"}\nnot json\n";
  std::ofstream(dir / "config.json") << "{\"model_type\": \"llama\"";  // truncated
  std::vector<std::string> cases = {
      "generate --model llama-3.2-1b --prompt hi --device tpu",
      "generate --model llama-3.2-1b --prompt hi --max-tokens 0",
      "generate --model llama-3.2-1b --prompt hi --top-p 0",
      "generate --model llama-3.2-1b",                                          // no prompt
      "generate --model llama-3.2-1b --prompt hi --prompt-file /etc/hostname",  // two
      "generate --model llama-3.2-1b --prompt-file /nonexistent.txt",
      "generate --model llama-3.2-1b --prompt hi --max-model-len -1",
      "generate --model llama-3.2-1b --prompt hi --max-model-len 200000",  // context 131072
      "generate --model llama-3.2-1b --prompt hi --max-num-batched-tokens 0",
      "generate --model llama-3.2-1b --prompt hi --warmup-runs -1",
      "bench --model llama-3-8b --input 8000 --output 500 --device cpu",  // context 8192
      "bench --model llama-3.2-1b --input 64 --output 64 --max-model-len 100 --device cpu",
      "bench --model llama-3.2-1b --max-model-len -3 --device cpu",
      "generate --model no-such-model --prompt hi",
      "generate --model " + dir.string() + " --prompt hi --tokenizer /nonexistent.json",
      "tokenize --input " + (dir / "bad.jsonl").string(),
      "tokenize --input /nonexistent.jsonl",
      "tokenize --tokenizer /nonexistent.json --text hi",
      "tokenize",
      "init-weights --model no-such-model --out " + (dir / "x").string(),
      "init-weights --model llama-3.2-1b --out " + (dir / "y").string() +
          " --tokenizer /nonexistent.json",
  };
  // Without a GPU, --device cuda is refused at once (with one, it would run).
  if (!engine::cuda_device_available()) {
    cases.push_back("generate --model llama-3.2-1b --prompt hi --device cuda");
  } else {
    // 405B in bf16 (810 GB) is refused with the sizes before anything is allocated.
    cases.push_back("generate --model llama-3.1-405b --prompt hi --device cuda");
  }
  testing::expect_refused(cases);
  auto past = run_inferlab("bench --model llama-3-8b --input 8000 --output 500 --device cpu");
  EXPECT_NE(past.err.find("--input 8000 plus --output 500 is 8500 tokens, past the maximum model "
                          "length of 8192 tokens"),
            std::string::npos)
      << past.err;
  if (testing::have_llama3_tokenizer()) {  // the prompt's length needs the tokenizer
    auto long_prompt = run_inferlab(
        "generate --model llama-3.2-1b --prompt hi --max-tokens 64 --max-model-len 32");
    EXPECT_EQ(long_prompt.exit_code, 2);
    EXPECT_NE(long_prompt.err.find("longer than the maximum model length of 32 tokens"),
              std::string::npos)
        << long_prompt.err;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace inferlab
