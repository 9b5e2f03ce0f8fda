// Head sizes at the command line: the CUDA engine takes a head_dim that is a multiple of 64 up to
// 256 and refuses any other with exit 2 and a message (before it looks for a GPU, so on any
// machine); the CPU reference runs a head_dim-256 model whose heads are wider than hidden_size /
// num_attention_heads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.hpp"

namespace inferlab {
namespace {

using testing::run_inferlab;

// A two-layer Llama of hidden 64 with 2 query heads and 1 KV head of `head_dim`.
std::filesystem::path head_dim_config(const std::filesystem::path& dir, int head_dim) {
  const nlohmann::json config = {{"architectures", {"LlamaForCausalLM"}},
                                 {"model_type", "llama"},
                                 {"hidden_size", 64},
                                 {"intermediate_size", 128},
                                 {"num_hidden_layers", 2},
                                 {"num_attention_heads", 2},
                                 {"num_key_value_heads", 1},
                                 {"head_dim", head_dim},
                                 {"vocab_size", 256},
                                 {"max_position_embeddings", 256},
                                 {"rms_norm_eps", 1e-5},
                                 {"rope_theta", 10000.0},
                                 {"tie_word_embeddings", true},
                                 {"torch_dtype", "bfloat16"}};
  const auto path = dir / ("head-dim-" + std::to_string(head_dim) + ".json");
  std::ofstream(path) << config.dump(2);
  return path;
}

TEST(EngineHeadDimCli, CudaRefusesHeadDimsOtherThanMultiplesOf64UpTo256) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("inferlab_head_dim_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (int head_dim : {96, 320}) {
    const auto r = run_inferlab("bench --model " + head_dim_config(dir, head_dim).string() +
                                " --input 16 --output 4 --device cuda --format json");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_NE(r.err.find("inferlab: error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("head_dim " + std::to_string(head_dim) + " is not supported"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("64, 128, 192 or 256"), std::string::npos) << r.err;
  }
  // The CPU reference takes head_dim 256 beside hidden 64 (q_dim 512).
  const auto cpu = run_inferlab("bench --model " + head_dim_config(dir, 256).string() +
                                " --input 16 --output 4 --device cpu --format json");
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  const auto result = nlohmann::json::parse(cpu.out);
  EXPECT_EQ(result["output_tokens"], 4);
  // 2 layers × (keys + values) × 1 KV head × 256 × 4 bytes (fp32 on the CPU).
  EXPECT_EQ(result["memory"]["kv_bytes_per_token"], 4096);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace inferlab
