// The persistent decode kernel (engine/cuda/decode_layers.hpp) in the CUDA backend: batch-1
// decode steps against the fp32 CPU reference and against the kernel-by-kernel path, at three
// head shapes (query heads per KV head 4, 8 and 2; head_dim 64 and 128), at a long context with
// few attention splits (many passes of its online softmax), replayed from CUDA graphs, and the
// passes it must leave to the kernel path. Without an sm_90 GPU (H100, H200) the tests skip.
#include <gtest/gtest.h>

#include "engine/cuda_backend.hpp"

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/cpu/cpu_backend.hpp"
#include "engine/cuda/backend_sequence.hpp"
#include "engine/cuda/decode_layers.hpp"
#include "engine/cuda/logits_agreement.hpp"
#include "engine/cuda/small_llama_config.hpp"
#include "engine/init_weights.hpp"
#include "engine/tensor_source.hpp"

namespace inferlab::engine {
namespace {

struct Heads {
  int hidden, heads, kv_heads, head_dim;
  int intermediate = 1536, layers = 3;
};

LlamaConfig config_of(const Heads& h) {
  nlohmann::json j = small_llama_json(1000);
  j["hidden_size"] = h.hidden;
  j["intermediate_size"] = h.intermediate;
  j["num_hidden_layers"] = h.layers;
  j["num_attention_heads"] = h.heads;
  j["num_key_value_heads"] = h.kv_heads;
  j["head_dim"] = h.head_dim;
  return parse_llama_config(j, "persistent-decode-test", "test config");
}

bool sm90() {
  if (!cuda_device_available()) return false;
  int device = 0, major = 0, minor = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  return major == 9 && minor == 0;
}

CudaBackendOptions options_for(DecodeLayersChoice layers, int splits = 0) {
  CudaBackendOptions options;
  options.max_kv_tokens = 640 * 16;  // room for 2,504 positions in every other block
  options.max_sequences = 4;
  options.max_batch_tokens = 4096;
  options.tuning.decode_layers = layers;
  options.tuning.attention.decode_splits = splits;
  return options;
}

// Blocks of a sequence of up to `tokens` positions, out of order in the pool.
BlockTable scattered_blocks(int tokens, int block_size) {
  BlockTable table;
  for (int b = (tokens + block_size - 1) / block_size - 1; b >= 0; --b) table.push_back(2 * b + 1);
  return table;
}

// The same model on the kernel path and the persistent one: a prompt of `prompt` tokens (ids of
// `prompt_seed`), then `steps` teacher-forced decode steps (token `first`, then base + step).
struct PathComparison {
  double worst_cosine = 1;  // of the two paths' logits over the decode steps
  int64_t persistent_passes = 0, kernel_passes = 0;
};
PathComparison compare_paths(const LlamaConfig& config, uint64_t seed, int splits, int prompt,
                             int prompt_seed, int32_t first, int32_t base, int steps) {
  auto kernels = make_cuda_backend(config, random_tensor_source(config, seed),
                                   options_for(DecodeLayersChoice::kernels, splits));
  auto persistent = make_cuda_backend(config, random_tensor_source(config, seed),
                                      options_for(DecodeLayersChoice::persistent, splits));
  const BlockTable table = scattered_blocks(prompt + 4, kernels->kv_layout().block_size);
  ForwardBatch prefill;
  prefill.sequences.push_back({sequence_tokens(prompt, prompt_seed), 0, table, false});
  kernels->forward(prefill);
  persistent->forward(prefill);
  ForwardBatch decode;
  decode.sequences.push_back({{first}, prompt, table, false});
  PathComparison result;
  for (int step = 0; step < steps; ++step) {
    const ForwardResult a = kernels->forward(decode), b = persistent->forward(decode);
    result.worst_cosine = std::min(result.worst_cosine, cosine(a.last(0), b.last(0)));
    decode.sequences[0].tokens = {base + step};
    decode.sequences[0].cached_tokens += 1;
  }
  result.persistent_passes = cuda_persistent_decode_passes(*persistent);
  result.kernel_passes = cuda_persistent_decode_passes(*kernels);
  return result;
}

TEST(PersistentDecode, StepsMatchTheCpuReference) {
  if (!sm90()) GTEST_SKIP() << "no sm_90 GPU";
  const Heads shapes[] = {{512, 8, 2, 64}, {512, 8, 1, 64}, {1024, 4, 2, 128}};
  for (const Heads& h : shapes) {
    const LlamaConfig config = config_of(h);
    const uint64_t seed = 11;
    auto gpu = make_cuda_backend(config, random_tensor_source(config, seed),
                                 options_for(DecodeLayersChoice::persistent));
    auto cpu =
        make_cpu_backend({config, random_llama_weights(config, seed)}, gpu->kv_layout().slots(),
                         gpu->kv_layout().block_size, QuantConfig{});
    const int prompt = 300, steps = 6;
    const BlockTable table = scattered_blocks(prompt + steps, gpu->kv_layout().block_size);
    ForwardBatch prefill;
    prefill.sequences.push_back({sequence_tokens(prompt, 1), 0, table, false});
    Agreement agreement;
    compare(gpu->forward(prefill), cpu->forward(prefill), agreement);
    const int64_t before = cuda_persistent_decode_passes(*gpu);
    ForwardBatch decode;
    decode.sequences.push_back({{7}, prompt, table, false});
    for (int step = 0; step < steps; ++step) {
      compare(gpu->forward(decode), cpu->forward(decode), agreement);
      decode.sequences[0].tokens = {static_cast<int32_t>(100 + 37 * step)};
      decode.sequences[0].cached_tokens += 1;
    }
    const std::string what = "heads " + std::to_string(h.heads) + "/" + std::to_string(h.kv_heads) +
                             ", head_dim " + std::to_string(h.head_dim);
    std::cout << what << ": min cosine " << agreement.min_cosine << ", top-1 "
              << agreement.top1_same << " of " << agreement.rows << "\n";
    EXPECT_EQ(cuda_persistent_decode_passes(*gpu) - before, steps) << what;
    // cuda_backend_test.cpp's bounds for a bf16 cache.
    EXPECT_GT(agreement.min_cosine, 0.999) << what;
    EXPECT_GE(agreement.top1_same, agreement.rows * 95 / 100) << what;
    EXPECT_EQ(agreement.top1_beyond_noise, 0) << what;
  }
}

// 2,500 positions over 2 attention items per KV head: 1,264 positions an item, ten passes of
// 128 (head_dim 64) or twenty of 64 (head_dim 128) through the running softmax; and the default
// split (66 items asked, 53 taken).
TEST(PersistentDecode, LongContextMatchesTheKernelPath) {
  if (!sm90()) GTEST_SKIP() << "no sm_90 GPU";
  for (const Heads& h : {Heads{512, 8, 2, 64}, Heads{1024, 4, 2, 128}}) {
    const LlamaConfig config = config_of(h);
    for (int splits : {2, 0}) {
      const PathComparison c = compare_paths(config, 4, splits, 2500, 2, 42, 500, 4);
      const std::string what =
          "head_dim " + std::to_string(h.head_dim) + ", splits " + std::to_string(splits);
      std::cout << what << ": worst cosine to the kernel path " << c.worst_cosine << "\n";
      EXPECT_EQ(c.persistent_passes, 4) << what;
      EXPECT_EQ(c.kernel_passes, 0) << what;
      // Both are bf16 forward passes of the same numerics with fp32 sums in other orders.
      EXPECT_GT(c.worst_cosine, 0.9995) << what;
    }
  }
}

// Two layers at Llama 3.2 1B's and Llama 3 8B's widths (the shapes whose speed is measured:
// rows that straddle slots, 11 and 12 slots, head_dim 64 and 128), 1,000 positions.
TEST(PersistentDecode, RealWidthsMatchTheKernelPath) {
  if (!sm90()) GTEST_SKIP() << "no sm_90 GPU";
  const Heads shapes[] = {{2048, 32, 8, 64, 8192, 2}, {4096, 32, 8, 128, 14336, 2}};
  for (const Heads& h : shapes) {
    const PathComparison c = compare_paths(config_of(h), 9, 0, 1000, 5, 77, 300, 3);
    std::cout << "hidden " << h.hidden << ": worst cosine to the kernel path " << c.worst_cosine
              << "\n";
    EXPECT_EQ(c.persistent_passes, 3) << h.hidden;
    EXPECT_GT(c.worst_cosine, 0.9995) << h.hidden;
  }
}

TEST(PersistentDecode, GraphReplayedStepsMatchEagerOnes) {
  if (!sm90()) GTEST_SKIP() << "no sm_90 GPU";
  const LlamaConfig config = config_of({512, 8, 2, 64});
  CudaBackendOptions options = options_for(DecodeLayersChoice::persistent);
  auto eager = make_cuda_backend(config, random_tensor_source(config, 6), options);
  options.cuda_graphs = true;
  auto graphed = make_cuda_backend(config, random_tensor_source(config, 6), options);
  ForwardBatch batch;
  batch.sequences.push_back({sequence_tokens(90, 3), 0, scattered_blocks(120, 16), false});
  expect_graph_replay_matches_eager(*eager, *graphed, batch, 16, "persistent decode");
  EXPECT_GE(cuda_persistent_decode_passes(*eager), 16);
  EXPECT_GE(cuda_persistent_decode_passes(*graphed), 1);  // captured once, replayed after
}

// Two sequences, a prefill and a verification of several tokens take the kernel path; so does
// every pass of a model the kernel does not take (int8 weights).
TEST(PersistentDecode, LeavesOtherPassesToTheKernels) {
  if (!sm90()) GTEST_SKIP() << "no sm_90 GPU";
  const LlamaConfig config = config_of({512, 8, 2, 64});
  auto gpu = make_cuda_backend(config, random_tensor_source(config, 8),
                               options_for(DecodeLayersChoice::persistent));
  ForwardBatch two;
  two.sequences.push_back({sequence_tokens(20, 1), 0, {1, 2}, false});
  two.sequences.push_back({sequence_tokens(20, 2), 0, {3, 4}, false});
  gpu->forward(two);
  for (auto& s : two.sequences) {
    s.cached_tokens = 20;
    s.tokens = {5};
  }
  gpu->forward(two);
  ForwardBatch verify;
  verify.sequences.push_back({{6, 7, 8}, 21, {1, 2}, true});
  gpu->forward(verify);
  EXPECT_EQ(cuda_persistent_decode_passes(*gpu), 0);
  ForwardBatch single;  // while one sequence's single token on the same backend takes the kernel
  single.sequences.push_back({{9}, 24, {1, 2}, false});
  gpu->forward(single);
  EXPECT_EQ(cuda_persistent_decode_passes(*gpu), 1);

  CudaBackendOptions int8 = options_for(DecodeLayersChoice::persistent);
  int8.quant.weights = DType::int8;
  auto quantized = make_cuda_backend(config, random_tensor_source(config, 8), int8);
  ForwardBatch one;
  one.sequences.push_back({sequence_tokens(20, 1), 0, {1, 2}, false});
  quantized->forward(one);
  one.sequences[0].cached_tokens = 20;
  one.sequences[0].tokens = {5};
  quantized->forward(one);
  EXPECT_EQ(cuda_persistent_decode_passes(*quantized), 0);
}

// The shapes the kernel refuses (any GPU: a host-side check).
TEST(PersistentDecode, RefusesShapesItHasNoKernelFor) {
  using cuda::persistent_decode_supported;
  using cuda::PersistentDecodeShape;
  PersistentDecodeShape s{2, 512, 1536, 8, 2, 64, 16};
  const auto refused = [](PersistentDecodeShape shape) {
    return !persistent_decode_supported(shape, 90);
  };
  EXPECT_TRUE(!persistent_decode_supported(s, 80));  // not a Hopper
  PersistentDecodeShape odd = s;
  odd.hidden = 768;  // not a multiple of 512
  EXPECT_TRUE(refused(odd));
  odd = s;
  odd.head_dim = 96;
  EXPECT_TRUE(refused(odd));
  odd = s;
  odd.num_heads = 32;
  odd.num_kv_heads = 2;  // 16 query heads per KV head
  EXPECT_TRUE(refused(odd));
  odd = s;
  odd.num_kv_heads = 3;  // 8 heads do not split into 3 groups
  EXPECT_TRUE(refused(odd));
  if (sm90()) {  // and the shape itself is taken
    EXPECT_TRUE(persistent_decode_supported(s, 90));
  }
}

}  // namespace
}  // namespace inferlab::engine
#endif  // INFERLAB_ENGINE_HAVE_CUDA
