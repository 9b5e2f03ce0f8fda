// The CUDA backend against the fp32 CPU reference on small Llama-architecture models whose heads
// are wider than hidden_size / num_attention_heads (head_dim 256 and 192 from config.json, as
// Gemma has): prefill, a mixed batch with a chunk after a cached prefix, decode steps and a
// speculative verification (the by-token decode), with a bf16, int8 and fp8 KV cache, flash and
// naive attention. Without a GPU the tests skip; a head_dim the kernels do not take is refused.
#include <gtest/gtest.h>

#include "engine/cuda_backend.hpp"

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <algorithm>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/cpu/cpu_backend.hpp"
#include "engine/cuda/backend_sequence.hpp"
#include "engine/cuda/logits_agreement.hpp"
#include "engine/cuda/small_llama_config.hpp"
#include "engine/init_weights.hpp"
#include "engine/sampling.hpp"
#include "engine/tensor_source.hpp"
#include "util/error.hpp"

namespace inferlab::engine {
namespace {

// small_llama_json's model (hidden 256, 4 query and 2 KV heads, 3 layers, vocabulary 1024) with
// heads of `head_dim`: q_dim 4 · head_dim, not hidden.
LlamaConfig wide_config(int head_dim) {
  nlohmann::json j = small_llama_json(1024);
  j["head_dim"] = head_dim;
  return parse_llama_config(j, "wide-heads-" + std::to_string(head_dim), "test config");
}

// Bounds as cuda_backend_test.cpp (bf16 cache) and cuda_quant_backend_test.cpp (int8/fp8 cache).
TEST(CudaHeadDimBackend, WideHeadsMatchTheCpuReference) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  const uint64_t seed = 5;
  for (int head_dim : {256, 192}) {
    const LlamaConfig config = wide_config(head_dim);
    for (DType kv : {DType::bf16, DType::int8, DType::fp8}) {
      for (bool naive : {false, true}) {
        QuantConfig quant;
        quant.kv = kv;
        CudaBackendOptions options;
        options.max_kv_tokens = 64 * 16;
        options.max_sequences = 8;
        options.max_batch_tokens = 512;
        options.naive_attention = naive;
        options.quant = quant;
        auto gpu = make_cuda_backend(config, random_tensor_source(config, seed), options);
        ASSERT_GE(gpu->kv_layout().num_blocks, 64);
        auto cpu = make_cpu_backend({config, random_llama_weights(config, seed)},
                                    gpu->kv_layout().slots(), 16, quant);
        const Agreement a = run_sequence(*gpu, *cpu);
        const std::string what = "head_dim " + std::to_string(head_dim) + ", " +
                                 std::string(dtype_name(kv)) + " cache" + (naive ? ", naive" : "");
        std::cout << what << ": min cosine " << a.min_cosine << ", top-1 " << a.top1_same << " of "
                  << a.rows << ", beyond noise " << a.top1_beyond_noise << "\n";
        const bool bf16 = kv == DType::bf16;
        EXPECT_GT(a.min_cosine, bf16 ? 0.999 : 0.995) << what;
        EXPECT_GE(a.top1_same, a.rows * (bf16 ? 95 : 90) / 100) << what;
        EXPECT_LE(a.top1_beyond_noise, bf16 ? 0 : a.rows / 100) << what;
      }
    }
  }
}

// Decode steps replayed from CUDA graphs pick what eager launches pick at head_dim 256.
TEST(CudaHeadDimBackend, GraphReplayedDecodeMatchesEagerAtHeadDim256) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  const LlamaConfig config = wide_config(256);
  CudaBackendOptions options;
  options.max_kv_tokens = 64 * 16;
  options.max_sequences = 8;
  options.max_batch_tokens = 512;
  auto eager = make_cuda_backend(config, random_tensor_source(config, 3), options);
  options.cuda_graphs = true;
  auto graphed = make_cuda_backend(config, random_tensor_source(config, 3), options);
  ForwardBatch batch;
  batch.sequences.push_back({sequence_tokens(40, 1), 0, {0, 1, 2, 3}, false});
  batch.sequences.push_back(
      {sequence_tokens(300, 2),
       0,
       {10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29},
       false});
  expect_graph_replay_matches_eager(*eager, *graphed, batch, 12, "head_dim 256");
}

// Refused before any GPU work (so also on a machine without one): an InputError naming the size
// and the sizes the kernels take.
TEST(CudaHeadDimBackend, RefusesHeadDimsThatAreNotMultiplesOf64UpTo256) {
  for (int head_dim : {96, 320}) {
    nlohmann::json j = small_llama_json(1024);
    j["head_dim"] = head_dim;
    const LlamaConfig config = parse_llama_config(j, "odd-heads", "test config");
    try {
      make_cuda_backend(config, random_tensor_source(config, 1), CudaBackendOptions{});
      ADD_FAILURE() << "head_dim " << head_dim << " was taken";
    } catch (const InputError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("head_dim " + std::to_string(head_dim)), std::string::npos) << message;
      EXPECT_NE(message.find("64, 128, 192 or 256"), std::string::npos) << message;
    }
  }
}

}  // namespace
}  // namespace inferlab::engine
#endif  // INFERLAB_ENGINE_HAVE_CUDA
