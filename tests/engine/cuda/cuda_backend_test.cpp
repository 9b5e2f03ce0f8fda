// The CUDA backend against the fp32 CPU reference on small Llama- and Qwen-shaped models with
// the same random weights: prefill, chunked prefill over a cached prefix, decode and mixed
// batches through the paged cache, and sampling on the GPU (one token per sequence, or per logit
// row). Without a GPU the tests skip.
#include "engine/cuda_backend.hpp"

#include <gtest/gtest.h>

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <algorithm>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "engine/cpu/cpu_backend.hpp"
#include "engine/cuda/logits_agreement.hpp"
#include "engine/cuda/small_llama_config.hpp"
#include "engine/init_weights.hpp"
#include "engine/sampling.hpp"

namespace inferlab::engine {
namespace {

#define REQUIRE_GPU() \
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU"

LlamaConfig small_config(bool qwen) {
  nlohmann::json j = small_llama_json();
  if (qwen) {
    j["architectures"] = {"Qwen2ForCausalLM"};
    j["model_type"] = "qwen2";
    j["tie_word_embeddings"] = true;
    j["rope_theta"] = 1000000.0;
  } else {
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", 32.0},
                         {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 8192}};
  }
  return parse_llama_config(j, qwen ? "small-qwen" : "small-llama", "test config");
}

std::vector<int32_t> tokens(int count, int seed) {
  std::vector<int32_t> ids;
  for (int i = 0; i < count; ++i) ids.push_back((seed * 7919 + i * 104729) % 1000);
  return ids;
}

// bf16 weights are identical on both sides; the GPU rounds activations to bf16 at every step
// (as transformers does) and the reference keeps fp32. Over 3 layers that leaves logits with a
// relative error of a few 2^-8: cosine above 0.999, and the argmax the same except where the
// top two logits are within that error.
void run_both(bool qwen) {
  const LlamaConfig config = small_config(qwen);
  const uint64_t seed = 5;
  CudaBackendOptions options;
  options.max_kv_tokens = 64 * 16;
  options.max_sequences = 8;
  options.max_batch_tokens = 512;
  auto gpu = make_cuda_backend(config, random_tensor_source(config, seed), options);
  CpuBackend cpu(config, random_llama_weights(config, seed), 16, gpu->kv_layout().num_blocks);
  ASSERT_GE(gpu->kv_layout().num_blocks, 64);

  Agreement agreement;
  // Sequence 1's blocks: 20 of the pool, not in order, skipping those of sequences 0 and 2.
  const BlockTable seq0 = {9, 3, 40, 41}, seq2 = {50};
  BlockTable seq1;
  for (int32_t b = 30; seq1.size() < 20; --b) {
    if (b != 9 && b != 3) seq1.push_back(b);
  }
  // 1. Two prompts in one prefill (47 and 280 tokens; every row's logits: 327 rows, more than
  //    one LM-head chunk of 256).
  ForwardBatch prefill;
  prefill.sequences.push_back({tokens(47, 1), 0, seq0, true});
  prefill.sequences.push_back({tokens(280, 2), 0, seq1, true});
  compare(gpu->forward(prefill), cpu.forward(prefill), agreement);
  // 2. A mixed batch: sequence 0 decodes one token, sequence 1 adds a chunk of 20 after its 280
  //    cached tokens, a new sequence 2 prefills 5 tokens.
  ForwardBatch mixed;
  mixed.sequences.push_back({{17}, 47, seq0, true});
  mixed.sequences.push_back({tokens(20, 3), 280, seq1, true});
  mixed.sequences.push_back({tokens(5, 4), 0, seq2, true});
  compare(gpu->forward(mixed), cpu.forward(mixed), agreement);
  // 3. Decode steps of all three (split-K over their contexts).
  ForwardBatch decode;
  decode.sequences.push_back({{3}, 48, seq0, false});
  decode.sequences.push_back({{999}, 300, seq1, false});
  decode.sequences.push_back({{0}, 5, seq2, false});
  for (int step = 0; step < 4; ++step) {
    compare(gpu->forward(decode), cpu.forward(decode), agreement);
    for (auto& s : decode.sequences) s.cached_tokens += 1;
  }
  // 4. A speculative verification: 4, 5 and 3 tokens after the cached ones, every row's logits
  //    (12 tokens: the decode kernel over the tokens, each with its causal prefix).
  ForwardBatch verify;
  verify.sequences.push_back({{5, 6, 7, 8}, 52, seq0, true});
  verify.sequences.push_back({tokens(5, 6), 304, seq1, true});
  verify.sequences.push_back({{9, 10, 11}, 9, seq2, true});
  compare(gpu->forward(verify), cpu.forward(verify), agreement);
  std::cout << (qwen ? "qwen" : "llama") << ": min cosine " << agreement.min_cosine << ", top-1 "
            << agreement.top1_same << " of " << agreement.rows << "\n";
  // Measured on the H100 (2026-11-23): min cosine 0.99982 (Llama) and 0.99987 (Qwen), top-1
  // 359 and 355 of 365 rows.
  EXPECT_GT(agreement.min_cosine, 0.999) << (qwen ? "qwen" : "llama");
  EXPECT_GE(agreement.top1_same, agreement.rows * 95 / 100)
      << agreement.top1_same << " of " << agreement.rows;
  EXPECT_EQ(agreement.top1_beyond_noise, 0);

  // 5. Sampling on the GPU picks what the host picks from the GPU's own logits.
  ForwardBatch next = decode;
  const ForwardResult logits = gpu->forward(next);
  std::vector<SampleSpec> specs = {
      {{0.0, 0, 1.0}, 0.0}, {{0.8, 0, 0.9}, 0.37}, {{1.0, 5, 1.0}, 0.9}};
  const auto ids =
      gpu->forward_sample(next, specs);  // rewrites the same slots with the same values
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto want =
        sampling_draws(specs[i].params)
            ? pick_token(sampling_distribution(logits.last(i), specs[i].params), specs[i].uniform)
            : argmax(logits.last(i));
    EXPECT_EQ(ids[i], want) << "sequence " << i;
  }
  EXPECT_GT(gpu->last_forward_device_s(), 0);
}

TEST(CudaBackend, LlamaWithLlama3RopeMatchesTheCpuReference) {
  REQUIRE_GPU();
  run_both(false);
}

TEST(CudaBackend, QwenWithQkvBiasAndTiedEmbeddingsMatchesTheCpuReference) {
  REQUIRE_GPU();
  run_both(true);
}

// Two backends with the same random weights (seed), 96 blocks of KV, up to 8 sequences and 2048
// tokens a pass: launches eager, and with CUDA graphs.
struct EagerAndGraphed {
  std::unique_ptr<Backend> eager, graphed;
};
EagerAndGraphed eager_and_graphed(const LlamaConfig& config, uint64_t seed) {
  CudaBackendOptions options;
  options.max_kv_tokens = 96 * 16;
  options.max_sequences = 8;
  options.max_batch_tokens = 2048;
  EagerAndGraphed pair;
  pair.eager = make_cuda_backend(config, random_tensor_source(config, seed), options);
  options.cuda_graphs = true;
  pair.graphed = make_cuda_backend(config, random_tensor_source(config, seed), options);
  return pair;
}

// Decode steps replayed from captured graphs pick what eager launches pick: batches of 3, 1 and 5
// sequences (padded to 4, 1 and 8), contexts crossing the 256-token bound, and a prefill
// (never a graph) in between; the padding writes only into the scratch block.
TEST(CudaBackend, GraphReplayedDecodeMatchesEagerLaunches) {
  REQUIRE_GPU();
  auto [eager, graphed] = eager_and_graphed(small_config(false), 2);
  ForwardBatch prefill;
  for (int s = 0; s < 5; ++s) {
    BlockTable table;
    for (int b = 0; b < 18; ++b) table.push_back(s * 18 + b);  // 288 tokens each
    prefill.sequences.push_back({tokens(240 + 3 * s, s + 1), 0, table, false});
  }
  std::vector<SampleSpec> greedy(5);
  auto a = eager->forward_sample(prefill, greedy);
  auto b = graphed->forward_sample(prefill, greedy);
  ASSERT_EQ(a, b);
  ForwardBatch decode = prefill;
  for (size_t s = 0; s < 5; ++s) {
    decode.sequences[s].cached_tokens = static_cast<int64_t>(prefill.sequences[s].tokens.size());
    decode.sequences[s].tokens.assign(1, a[s]);
  }
  for (int step = 0; step < 24; ++step) {
    const size_t count = step < 8 ? 3 : (step < 12 ? 1 : 5);
    ForwardBatch batch;
    batch.sequences.assign(decode.sequences.begin(), decode.sequences.begin() + count);
    const std::vector<SampleSpec> specs(count);
    const auto ids_eager = eager->forward_sample(batch, specs);
    const auto ids_graph = graphed->forward_sample(batch, specs);
    ASSERT_EQ(ids_graph, ids_eager) << "step " << step;
    EXPECT_GT(graphed->last_forward_device_s(), 0);
    for (size_t s = 0; s < count; ++s) {
      decode.sequences[s].cached_tokens += 1;
      decode.sequences[s].tokens.assign(1, ids_eager[s]);
    }
  }
}

// The pick of every logit row on the GPU (forward_sample_rows: speculative verification's
// argmax of k + 1 rows) is the host's pick from forward()'s own logits: 306 rows, more than one
// LM-head chunk of 256, greedy and sampled rows mixed; then a verify-shaped pass of 5 tokens
// after the cached prompt, greedy, with graphs on (it replays a graph of one sequence of 5
// tokens, whose launches are forward()'s).
TEST(CudaBackend, PicksOfEveryRowOnTheGpuAreTheHostsFromTheSameLogits) {
  REQUIRE_GPU();
  const LlamaConfig config = small_config(false);
  CudaBackendOptions options;
  options.max_kv_tokens = 64 * 16;
  options.max_sequences = 8;
  options.max_batch_tokens = 512;
  options.cuda_graphs = true;
  auto gpu = make_cuda_backend(config, random_tensor_source(config, 4), options);
  BlockTable long_table;
  for (int32_t b = 0; b < 20; ++b) long_table.push_back(b);
  ForwardBatch batch;
  batch.sequences.push_back({tokens(300, 1), 0, long_table, true});
  batch.sequences.push_back({tokens(33, 2), 0, {30, 31, 32}, false});
  batch.sequences.push_back({tokens(5, 3), 0, {40}, true});
  ASSERT_EQ(logit_rows(batch), 306);
  std::vector<SampleSpec> specs(306);
  specs[1] = {{0.8, 0, 0.9}, 0.37};
  specs[257] = {{1.0, 0, 1.0}, 0.5};  // in the second LM-head chunk
  specs[300] = {{1.0, 5, 1.0}, 0.9};  // sequence 1's one row
  specs[305] = {{0.7, 1, 1.0}, 0.2};  // top_k 1: the argmax
  const ForwardResult logits = gpu->forward(batch);
  const auto ids = gpu->forward_sample_rows(batch, specs);  // the same slots, the same values
  ASSERT_EQ(ids.size(), 306u);
  for (int64_t r = 0; r < 306; ++r) {
    const SampleSpec& spec = specs[static_cast<size_t>(r)];
    const auto want =
        sampling_draws(spec.params)
            ? pick_token(sampling_distribution(logits.row(r), spec.params), spec.uniform)
            : argmax(logits.row(r));
    EXPECT_EQ(ids[static_cast<size_t>(r)], want) << "row " << r;
  }
  EXPECT_GT(gpu->last_forward_device_s(), 0);

  ForwardBatch verify;
  verify.sequences.push_back({{ids[299], 11, 12, 13, 14}, 300, long_table, true});
  const ForwardResult rows = gpu->forward(verify);
  const auto argmaxes = gpu->forward_argmax_rows(verify);
  ASSERT_EQ(argmaxes.size(), 5u);
  for (int64_t r = 0; r < 5; ++r) {
    EXPECT_EQ(argmaxes[static_cast<size_t>(r)], argmax(rows.row(r))) << "verify row " << r;
  }
  const std::vector<SampleSpec> one_short(4);
  EXPECT_THROW(gpu->forward_sample_rows(verify, one_short), std::invalid_argument);
}

// Speculative passes replayed from graphs pick what eager launches pick: verifications (every
// row of k + 1 tokens) of 1, 2 and 3 sequences (padded to 1, 2 and 4) and of 1 to 6 tokens, and
// a draft model's catch-up (2 tokens, the last row), over contexts crossing the 256-token bound.
// Where the padding changes the launches' shapes (3 sequences as 4), the graph's pick is within
// bf16 noise of the eager logits' top.
TEST(CudaBackend, GraphReplayedVerificationMatchesEagerLaunches) {
  REQUIRE_GPU();
  auto [eager, graphed] = eager_and_graphed(small_config(false), 3);
  std::vector<SequenceChunk> prompts;
  for (int s = 0; s < 3; ++s) {
    BlockTable table;
    for (int b = 0; b < 24; ++b) table.push_back(s * 24 + b);  // 384 tokens each
    prompts.push_back({tokens(248 + 3 * s, s + 1), 0, table, false});
  }
  ForwardBatch prefill;
  prefill.sequences = prompts;
  std::vector<SampleSpec> greedy(3);
  ASSERT_EQ(eager->forward_sample(prefill, greedy), graphed->forward_sample(prefill, greedy));
  for (auto& p : prompts) p.cached_tokens = static_cast<int64_t>(p.tokens.size());

  int checked = 0;
  for (int round = 0; round < 12; ++round) {
    const size_t count = 1 + static_cast<size_t>(round % 3);
    const int query = 1 + round % 6;
    ForwardBatch verify;
    for (size_t s = 0; s < count; ++s) {
      SequenceChunk c = prompts[s];
      c.tokens = tokens(query, 40 + round * 3 + static_cast<int>(s));
      c.all_logits = true;
      verify.sequences.push_back(c);
    }
    const std::vector<SampleSpec> specs(count * static_cast<size_t>(query));
    const ForwardResult rows = eager->forward(verify);
    const auto ids_eager = eager->forward_sample_rows(verify, specs);
    const auto ids_graph = graphed->forward_sample_rows(verify, specs);
    ASSERT_EQ(ids_graph.size(), specs.size());
    EXPECT_GT(graphed->last_forward_device_s(), 0);
    for (size_t r = 0; r < specs.size(); ++r) {
      if (count != 3) {
        EXPECT_EQ(ids_graph[r], ids_eager[r]) << "round " << round << " row " << r;
        continue;
      }
      const auto row = rows.row(static_cast<int64_t>(r));
      const float top = row[static_cast<size_t>(argmax(row))];
      EXPECT_LE(top - row[static_cast<size_t>(ids_graph[r])], 0.03f * std::abs(top))
          << "round " << round << " row " << r;
    }
    ++checked;
    // The draft's catch-up: the last two of those tokens again, the last row's pick.
    if (query >= 2) {
      ForwardBatch catch_up;
      for (size_t s = 0; s < count; ++s) {
        SequenceChunk c = verify.sequences[s];
        c.cached_tokens += query - 2;
        c.tokens.erase(c.tokens.begin(), c.tokens.end() - 2);
        c.all_logits = false;
        catch_up.sequences.push_back(c);
      }
      const std::vector<SampleSpec> last(count);
      const auto a = eager->forward_sample(catch_up, last);
      const auto b = graphed->forward_sample(catch_up, last);
      if (count != 3) {
        EXPECT_EQ(a, b) << "round " << round;
      }
    }
    // The round accepted one token: the contexts grow by one.
    for (size_t s = 0; s < count; ++s) {
      prompts[s].tokens.push_back(verify.sequences[s].tokens.front());
      prompts[s].cached_tokens += 1;
    }
  }
  EXPECT_EQ(checked, 12);
}

TEST(CudaBackend, ProfilingChargesEveryKernelClass) {
  REQUIRE_GPU();
  const LlamaConfig config = small_config(false);
  CudaBackendOptions options;
  options.max_kv_tokens = 256;
  options.max_sequences = 4;
  options.max_batch_tokens = 128;
  auto gpu = make_cuda_backend(config, random_tensor_source(config, 1), options);
  gpu->set_profiling(true);
  ForwardBatch batch;
  batch.sequences.push_back({tokens(33, 1), 0, {0, 1, 2}, false});
  gpu->forward(batch);
  double sum = 0;
  std::vector<std::string> names;
  for (const auto& k : gpu->last_forward_profile()) {
    sum += k.seconds;
    names.push_back(k.name);
    EXPECT_GT(k.launches, 0);
  }
  for (const char* name : {"embedding", "norm", "gemm_qkv", "rope_kv_write", "attention", "gemm_o",
                           "gemm_gate_up", "silu_mul", "gemm_down", "lm_head"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
  // The classes split the whole pass (less the copies at its ends).
  EXPECT_LE(sum, gpu->last_forward_device_s() * 1.0001);
  EXPECT_GT(sum, 0.5 * gpu->last_forward_device_s());
}

}  // namespace
}  // namespace inferlab::engine

#else
TEST(CudaBackend, NeedsACudaBuild) {
  GTEST_SKIP() << "built without CUDA";
}
#endif
