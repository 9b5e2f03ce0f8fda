// The CUDA backend on small mixture-of-experts models (3 layers of 256, 8 experts of 384, top 2;
// Mixtral's routing, and Qwen2-MoE's without renormalisation, with its q/k/v biases; and every
// expert chosen, 4 of 4) against the fp32 CPU reference: a prefill of 327 tokens, a mixed
// batch, decode steps and a verification (the experts' GEMM form) and a single token's step (the
// expert decode kernels), with a bf16 and an int8 KV cache; decode steps replayed from CUDA
// graphs pick what eager launches pick.
// Without a GPU the tests skip.
#include <gtest/gtest.h>

#include "engine/cuda_backend.hpp"

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/cpu/cpu_backend.hpp"
#include "engine/cuda/backend_sequence.hpp"
#include "engine/cuda/logits_agreement.hpp"
#include "engine/cuda/small_llama_config.hpp"
#include "engine/init_weights.hpp"
#include "engine/moe_test_support.hpp"
#include "engine/sampling.hpp"
#include "engine/tensor_source.hpp"

namespace inferlab::engine {
namespace {

// small_llama_json's model (3 layers of 256) with 8 experts of 384, top 2.
nlohmann::json mixtral_json() {
  nlohmann::json j = small_llama_json(1024);
  j["architectures"] = {"MixtralForCausalLM"};
  j["model_type"] = "mixtral";
  j["intermediate_size"] = 384;
  j["num_local_experts"] = 8;
  j["num_experts_per_tok"] = 2;
  return j;
}

LlamaConfig mixtral_config() {
  return parse_llama_config(mixtral_json(), "small-mixtral", "test config");
}

LlamaConfig qwen_moe_config() {
  return parse_llama_config(testing::as_qwen_moe(mixtral_json(), 1024, false), "small-qwen-moe",
                            "test config");
}

CudaBackendOptions small_options() {
  CudaBackendOptions options;
  options.max_kv_tokens = 64 * 16;
  options.max_sequences = 8;
  options.max_batch_tokens = 512;
  return options;
}

Agreement run_model(const LlamaConfig& config, DType kv) {
  CudaBackendOptions options = small_options();
  options.quant.kv = kv;
  auto gpu = make_cuda_backend(config, random_tensor_source(config, 7), options);
  auto cpu = make_cpu_backend({config, random_llama_weights(config, 7)}, gpu->kv_layout().slots(),
                              16, options.quant);
  const Agreement a = run_sequence(*gpu, *cpu, /*single_token_step=*/true);
  int below = 0;
  for (double c : a.cosines) below += c < 0.999;
  std::cout << config.model.name << ", " << dtype_name(kv) << " cache: min cosine " << a.min_cosine
            << ", rows below 0.999: " << below << " of " << a.rows << ", top-1 " << a.top1_same
            << ", beyond noise " << a.top1_beyond_noise << "\n";
  return a;
}

// With every expert chosen (top 4 of 4) the routing has no discontinuity, so the GPU follows the
// reference as closely as a dense model does (cuda_head_dim_backend_test.cpp's bounds): this
// checks the router, the sort, both forms of the experts and the combine.
TEST(CudaMoeBackend, EveryExpertChosenMatchesTheCpuReference) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  LlamaConfig config = mixtral_config();
  config.model.num_experts = 4;
  config.model.experts_per_token = 4;
  config.model.name = "small-mixtral-top4-of-4";
  for (DType kv : {DType::bf16, DType::int8}) {
    const Agreement a = run_model(config, kv);
    const bool bf16 = kv == DType::bf16;
    EXPECT_GT(a.min_cosine, bf16 ? 0.999 : 0.995);
    EXPECT_GE(a.top1_same, a.rows * (bf16 ? 95 : 90) / 100);
    EXPECT_LE(a.top1_beyond_noise, bf16 ? 0 : a.rows / 100);
  }
}

// Top 2 of 8: where a token's second and third router logits are closer than bf16 rounding
// moves them, the GPU and the fp32 reference send it to different experts, and that row's
// logits (and later rows', through the KV cache) move by far more than rounding. Most rows
// agree; transformers' own bf16 model does the same against fp32 (validation/moe_gpu.py).
TEST(CudaMoeBackend, TopTwoRoutingMatchesTheCpuReferenceOnMostRows) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  for (const LlamaConfig& config : {mixtral_config(), qwen_moe_config()}) {
    const Agreement a = run_model(config, DType::bf16);
    int below = 0;
    for (double c : a.cosines) below += c < 0.999;
    EXPECT_LE(below, a.rows / 5) << config.model.name;
    EXPECT_GE(a.top1_same, a.rows * 85 / 100) << config.model.name;
  }
}

// Decode steps replayed from CUDA graphs (the expert kernels captured) pick what eager launches
// pick at one sequence; at 40 (80 slots: the GEMM form, which reads row counts on the host) the
// backend runs the steps eagerly even with graphs on, and picks the same.
TEST(CudaMoeBackend, GraphReplayedDecodeMatchesEager) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  const LlamaConfig config = mixtral_config();
  for (int sequences : {1, 40}) {
    CudaBackendOptions options = small_options();
    options.max_sequences = 64;
    options.max_kv_tokens = 64 * 64 * 2;
    options.max_batch_tokens = 2048;
    options.cuda_graphs = false;
    auto eager = make_cuda_backend(config, random_tensor_source(config, 3), options);
    options.cuda_graphs = true;
    auto graphed = make_cuda_backend(config, random_tensor_source(config, 3), options);
    ForwardBatch batch;
    for (int s = 0; s < sequences; ++s) {
      BlockTable table;
      for (int b = 0; b < 5; ++b) table.push_back(s * 5 + b);  // 80 tokens: 59 + 7 steps fit
      batch.sequences.push_back({sequence_tokens(20 + s, s + 1), 0, table, false});
    }
    expect_graph_replay_matches_eager(*eager, *graphed, batch, 6,
                                      std::to_string(sequences) + " sequences");
  }
}

}  // namespace
}  // namespace inferlab::engine

#else

TEST(CudaMoeBackend, NeedsCuda) {
  GTEST_SKIP() << "built without CUDA";
}

#endif
