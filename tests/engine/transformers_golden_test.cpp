// The CPU reference against Hugging Face transformers: tiny models saved by transformers
// (tests/engine/data/make_hf_tiny.py) with the logits and greedy tokens transformers computed.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "engine/cpu/cpu_backend.hpp"
#include "engine/generate.hpp"
#include "test_support.hpp"

namespace inferlab::engine {
namespace {

std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(inferlab::testing::test_data_dir()).parent_path() / "tests" /
         "engine" / "data" / name;
}

class TransformersGolden : public ::testing::TestWithParam<const char*> {};

// Prefill of 100 tokens, then a chunk of 50 attending to the cached 100: every checked row
// within 5e-5 of transformers' fp32 logits (about 1e-5 of their range), and greedy decoding of
// 32 tokens identical.
TEST_P(TransformersGolden, LogitsAndGreedyTokens) {
  const auto folder = fixture(GetParam());
  auto expected = nlohmann::json::parse(std::ifstream(folder / "expected.json"));
  const auto tokens = expected["tokens"].get<std::vector<int32_t>>();
  auto model = load_llama_model(folder);
  const int64_t vocab = model.config.model.vocab_size;
  auto backend = make_cpu_backend(model, 160, 16);
  SequenceChunk prefix{{tokens.begin(), tokens.begin() + 100}, 0, {}, true};
  BlockAllocator allocator(backend->kv_layout().num_blocks);
  ASSERT_TRUE(allocator.grow(prefix.block_table, 150, 16));
  auto first = backend->forward({{prefix}});
  SequenceChunk rest{{tokens.begin() + 100, tokens.end()}, 100, prefix.block_table, true};
  auto second = backend->forward({{rest}});

  const auto rows = expected["logit_rows"].get<std::vector<int64_t>>();
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto reference = expected["logits"][i].get<std::vector<float>>();
    ASSERT_EQ(static_cast<int64_t>(reference.size()), vocab);
    auto ours = rows[i] < 100 ? first.row(rows[i]) : second.row(rows[i] - 100);
    double worst = 0;
    for (int64_t v = 0; v < vocab; ++v) {
      worst = std::max(worst, std::fabs(double{ours[v]} - reference[v]));
    }
    EXPECT_LT(worst, 5e-5) << "position " << rows[i];
    EXPECT_EQ(argmax(ours), argmax(reference)) << "position " << rows[i];
  }

  const int64_t prompt_tokens = expected["greedy_prompt_tokens"].get<int64_t>();
  const auto greedy = expected["greedy"].get<std::vector<int32_t>>();
  auto fresh = make_cpu_backend(model, 160, 16);
  GenerateOptions options;
  options.max_new_tokens = static_cast<int64_t>(greedy.size());
  auto result = generate(
      *fresh, std::vector<int32_t>(tokens.begin(), tokens.begin() + prompt_tokens), options);
  EXPECT_EQ(result.tokens, greedy);
}

INSTANTIATE_TEST_SUITE_P(Models, TransformersGolden,
                         ::testing::Values("hf_tiny_llama", "hf_tiny_qwen", "hf_tiny_mistral"));

}  // namespace
}  // namespace inferlab::engine
