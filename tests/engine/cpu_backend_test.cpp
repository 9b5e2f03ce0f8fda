#include "engine/cpu/cpu_backend.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/generate.hpp"
#include "engine/init_weights.hpp"
#include "engine_test_support.hpp"

namespace inferlab::engine {
namespace {

using testing::expect_input_error;
using testing::ScratchDir;
using testing::tiny_model;

std::vector<int32_t> prompt_of(int64_t length) {
  std::vector<int32_t> tokens;
  for (int64_t i = 0; i < length; ++i) tokens.push_back(static_cast<int32_t>((i * 37 + 11) % 256));
  return tokens;
}

double max_abs_diff(std::span<const float> a, std::span<const float> b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double{a[i]} - b[i]));
  return worst;
}

class ChunkedPrefill : public ::testing::TestWithParam<int64_t> {};

// All positions' logits of a 20-token sequence computed three ways: the whole prompt at once;
// a prefix of 7, a chunk of 9, then 4 decode steps; and all through a fresh cache per block size.
TEST_P(ChunkedPrefill, EqualsWholePromptPrefill) {
  const int64_t block_size = GetParam();
  for (const auto& json : {testing::tiny_llama_config_json(), testing::tiny_qwen_config_json()}) {
    auto model = tiny_model(json, 11);
    CpuBackend whole(model.config, model.weights, block_size, 64);
    CpuBackend pieces(model.config, model.weights, block_size, 64);
    const auto tokens = prompt_of(20);
    BlockAllocator allocator(64);

    SequenceChunk all{tokens, 0, {}, true};
    allocator.grow(all.block_table, 20, block_size);
    auto reference = whole.forward({{all}});
    ASSERT_EQ(reference.rows(0), 20);

    // The pieces use a different (scattered) block table.
    BlockAllocator other(64);
    BlockTable spare;
    other.grow(spare, 3 * block_size, block_size);  // skip some blocks
    BlockTable table;
    std::vector<std::vector<float>> rows;
    int64_t done = 0;
    for (int64_t length : {7, 9, 1, 1, 1, 1}) {
      SequenceChunk chunk{{tokens.begin() + done, tokens.begin() + done + length}, done, {}, true};
      other.grow(table, done + length, block_size);
      chunk.block_table = table;
      auto result = pieces.forward({{chunk}});
      ASSERT_EQ(result.rows(0), length);
      for (int64_t r = 0; r < length; ++r) {
        auto row = result.row(r);
        rows.emplace_back(row.begin(), row.end());
      }
      done += length;
    }
    for (int64_t t = 0; t < 20; ++t) {
      EXPECT_LE(max_abs_diff(rows[static_cast<size_t>(t)], reference.row(t)), 1e-5)
          << "position " << t;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, ChunkedPrefill, ::testing::Values(1, 3, 16));

TEST(CpuBackend, BatchEqualsSequencesAlone) {
  auto model = tiny_model(testing::tiny_llama_config_json(), 5);
  CpuBackend backend(model.config, model.weights, 4, 32);
  SequenceChunk a{prompt_of(6), 0, {0, 1}, false};
  SequenceChunk b{{3, 1, 4}, 0, {5}, false};
  auto batched = backend.forward({{a, b}});
  ASSERT_EQ(batched.first_row, (std::vector<int64_t>{0, 1, 2}));
  CpuBackend alone(model.config, model.weights, 4, 32);
  auto only_b = alone.forward({{b}});
  EXPECT_EQ(max_abs_diff(batched.last(1), only_b.last(0)), 0.0);
  // Logits are not degenerate: spread over a range of values.
  auto row = batched.last(0);
  float low = *std::min_element(row.begin(), row.end());
  float high = *std::max_element(row.begin(), row.end());
  EXPECT_GT(high - low, 1.0f);
  EXPECT_TRUE(std::isfinite(low) && std::isfinite(high));
}

TEST(CpuBackend, RejectsBadBatches) {
  auto model = tiny_model(testing::tiny_llama_config_json(), 5);
  CpuBackend backend(model.config, model.weights, 4, 8);
  expect_input_error(
      [&] {
        backend.forward({{SequenceChunk{{300}, 0, {0}, false}}});
      },
      {"token id 300 is outside the vocabulary"});
  EXPECT_THROW(backend.forward({{SequenceChunk{prompt_of(5), 0, {0}, false}}}),
               std::invalid_argument);
  EXPECT_THROW(backend.forward({{SequenceChunk{{1}, 0, {8}, false}}}), std::invalid_argument);
}

// A backend refuses positions past the model's context in words, whatever its caller checked:
// the tiny model's context is 512 (positions 0 to 511).
TEST(CpuBackend, RefusesPositionsPastTheContext) {
  auto model = tiny_model(testing::tiny_llama_config_json(), 5);
  CpuBackend backend(model.config, model.weights, 16, 40);  // 640 slots: the cache is not the limit
  BlockTable all_blocks;
  for (int32_t b = 0; b < 40; ++b) all_blocks.push_back(b);
  // Position 511 is the last one: a decode there runs.
  EXPECT_NO_THROW(backend.forward({{SequenceChunk{{7}, 511, all_blocks, false}}}));
  expect_input_error(
      [&] {
        backend.forward({{SequenceChunk{{7}, 512, all_blocks, false}}});
      },
      {"sequence 0", "positions up to 512", "context of 512 tokens"});
  expect_input_error(
      [&] {
        backend.forward({{SequenceChunk{prompt_of(20), 500, all_blocks, false}}});
      },
      {"positions up to 519"});
}

TEST(CpuBackend, MemoryEstimate) {
  auto config = load_llama_config("llama-3.2-1b");
  // 1.236 G parameters in fp32, and 16 layers x 8 KV heads x 64 x 2 x 4 bytes = 64 KiB a token.
  EXPECT_EQ(cpu_backend_bytes(config, 1000, 16), 4 * config.model.total_params() + 1008 * 65536);
  EXPECT_NEAR(static_cast<double>(cpu_backend_bytes(config, 1, 16)), 4.94e9, 0.01e9);
}

TEST(CpuBackend, TiedAndUntiedHeads) {
  auto tied = tiny_model(testing::tiny_llama_config_json(), 1);
  EXPECT_TRUE(tied.weights.lm_head.empty());
  auto untied = tiny_model(testing::tiny_qwen_config_json(), 1);
  EXPECT_EQ(untied.weights.lm_head.size(), 256u * 64u);
  EXPECT_EQ(&untied.weights.output_embedding(), &untied.weights.lm_head);
}

// init-weights → load → generate, greedy and sampled, deterministic.
TEST(Generate, EndToEndFromCheckpoint) {
  ScratchDir dir("e2e");
  auto config = parse_llama_config(testing::tiny_llama_config_json(), "tiny", "tiny config");
  InitWeightsOptions options;
  options.out_dir = dir / "ckpt";
  options.seed = 1;
  init_weights(config, options);

  auto run = [&](const SamplingParams& sampling, uint64_t seed) {
    auto backend = make_cpu_backend(load_llama_model(options.out_dir), 64, 16);
    GenerateOptions generate_options;
    generate_options.max_new_tokens = 24;
    generate_options.sampling = sampling;
    generate_options.seed = seed;
    std::vector<int32_t> streamed;
    auto result = generate(*backend, prompt_of(10), generate_options,
                           [&](int32_t token) { streamed.push_back(token); });
    EXPECT_EQ(streamed, result.tokens);
    EXPECT_EQ(result.finish_reason, "length");
    EXPECT_GE(result.e2e_s, result.ttft_s);
    return result.tokens;
  };
  auto greedy = run({}, 1);
  ASSERT_EQ(greedy.size(), 24u);
  EXPECT_EQ(run({}, 2), greedy);             // greedy ignores the seed
  EXPECT_EQ(run({1.0, 1, 1.0}, 3), greedy);  // top-k 1 is greedy
  auto sampled = run({1.0, 50, 0.9}, 42);
  EXPECT_EQ(run({1.0, 50, 0.9}, 42), sampled);
  EXPECT_NE(run({1.0, 50, 0.9}, 43), sampled);

  // The greedy tokens follow the teacher-forced argmax of one whole-sequence pass.
  auto backend = make_cpu_backend(load_llama_model(options.out_dir), 64, 16);
  std::vector<int32_t> sequence = prompt_of(10);
  sequence.insert(sequence.end(), greedy.begin(), greedy.end() - 1);
  SequenceChunk chunk{sequence, 0, {0, 1, 2}, true};
  auto logits = backend->forward({{chunk}});
  for (size_t i = 0; i < greedy.size(); ++i) {
    EXPECT_EQ(argmax(logits.row(static_cast<int64_t>(9 + i))), greedy[i]) << "step " << i;
  }
  // A stop token ends generation early and is kept.
  GenerateOptions stop;
  stop.max_new_tokens = 24;
  stop.stop_token_ids = {greedy[3]};
  auto stopped = generate(*backend, prompt_of(10), stop);
  EXPECT_EQ(stopped.finish_reason, "stop");
  EXPECT_EQ(stopped.tokens.back(), greedy[3]);
}

// A long prompt prefilled in chunks gives the tokens of one whole-prompt pass, greedy and
// sampled, for chunk sizes that divide the prompt, leave a remainder, or exceed it.
TEST(Generate, ChunkedPrefillGivesTheWholePromptsTokens) {
  auto model = tiny_model(testing::tiny_llama_config_json(), 3);
  auto run = [&](int64_t chunk, const SamplingParams& sampling) {
    auto backend = make_cpu_backend(model, 256, 16);
    GenerateOptions options;
    options.max_new_tokens = 12;
    options.sampling = sampling;
    options.seed = 9;
    options.prefill_chunk_tokens = chunk;
    return generate(*backend, prompt_of(100), options).tokens;
  };
  for (const SamplingParams& sampling : {SamplingParams{}, SamplingParams{1.0, 40, 0.95}}) {
    const auto whole = run(0, sampling);
    ASSERT_EQ(whole.size(), 12u);
    for (int64_t chunk : {1, 7, 25, 50, 99, 100, 1000}) {
      EXPECT_EQ(run(chunk, sampling), whole) << "chunk " << chunk;
    }
  }
  // What the chunks leave for the sampling pass: the remainder, or a whole last chunk.
  auto backend = make_cpu_backend(model, 256, 16);
  BlockAllocator allocator(backend->kv_layout().num_blocks);
  BlockTable table;
  const auto prompt = prompt_of(100);
  EXPECT_EQ(prefill_leading_chunks(*backend, allocator, table, prompt, 30).size(), 10u);
  EXPECT_EQ(table.size(), 6u);  // 90 tokens in blocks of 16
  BlockTable table2;
  EXPECT_EQ(prefill_leading_chunks(*backend, allocator, table2, prompt, 25).size(), 25u);
  BlockTable table3;
  EXPECT_EQ(prefill_leading_chunks(*backend, allocator, table3, prompt, 0).size(), 100u);
  EXPECT_TRUE(table3.empty());
}

TEST(Generate, PromptTooLong) {
  auto model = tiny_model(testing::tiny_llama_config_json(), 1);  // context 512
  auto backend = make_cpu_backend(model, 1024, 16);
  GenerateOptions options;
  options.max_new_tokens = 10;
  expect_input_error([&] { generate(*backend, prompt_of(505), options); },
                     {"505 tokens", "context of 512"});
  auto small = make_cpu_backend(model, 32, 16);
  expect_input_error([&] { generate(*small, prompt_of(30), options); }, {"KV blocks"});
  expect_input_error([&] { generate(*small, {}, options); }, {"no tokens"});
}

}  // namespace
}  // namespace inferlab::engine
