// The CUDA backend on the families the spec table added (model/family_spec.cpp) against the fp32
// CPU reference, on small_llama_json's shapes (3 layers of 256, 4 query and 2 KV heads of 64):
// - Qwen3 (per-head q/k norms before RoPE), with a bf16 and an int8 KV cache, and decode steps
//   replayed from CUDA graphs picking what eager launches pick;
// - Qwen3-MoE with every expert chosen (4 of 4: no routing discontinuity, so dense bounds), and
//   with 32 experts, top 4, whose batched decode takes the grouped expert kernels;
// - Phi-3 from a checkpoint init-weights wrote (q/k/v stacked in qkv_proj, gate/up in
//   gate_up_proj), cut back into parts as the GPU loads it.
// The sequence is backend_sequence.hpp's (prefill of 327 rows, a mixed batch, decode steps, a
// verification). Without a GPU the tests skip.
#include <gtest/gtest.h>

#include "engine/cuda_backend.hpp"

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/checkpoint.hpp"
#include "engine/cpu/cpu_backend.hpp"
#include "engine/cuda/backend_sequence.hpp"
#include "engine/cuda/logits_agreement.hpp"
#include "engine/cuda/small_llama_config.hpp"
#include "engine/engine_test_support.hpp"
#include "engine/init_weights.hpp"
#include "engine/llama_weights.hpp"
#include "engine/sampling.hpp"
#include "engine/tensor_source.hpp"
#include "model/engine_moe_rules.hpp"

namespace inferlab::engine {
namespace {

LlamaConfig family_config(const char* model_type, const char* architecture) {
  nlohmann::json j = small_llama_json(1024);
  j["architectures"] = {architecture};
  j["model_type"] = model_type;
  return parse_llama_config(j, std::string("small-") + model_type, "test config");
}

CudaBackendOptions small_options(DType kv = DType::bf16) {
  CudaBackendOptions options;
  options.max_kv_tokens = 64 * 16;
  options.max_sequences = 8;
  options.max_batch_tokens = 512;
  options.quant.kv = kv;
  return options;
}

// Bounds as cuda_head_dim_backend_test.cpp (bf16 cache) and cuda_quant_backend_test.cpp (int8).
void expect_dense_agreement(const Agreement& a, bool bf16_cache, const std::string& what) {
  std::cout << what << ": min cosine " << a.min_cosine << ", top-1 " << a.top1_same << " of "
            << a.rows << ", beyond noise " << a.top1_beyond_noise << "\n";
  EXPECT_GT(a.min_cosine, bf16_cache ? 0.999 : 0.995) << what;
  EXPECT_GE(a.top1_same, a.rows * (bf16_cache ? 95 : 90) / 100) << what;
  EXPECT_LE(a.top1_beyond_noise, bf16_cache ? 0 : a.rows / 100) << what;
}

TEST(CudaFamilyBackend, Qwen3MatchesTheCpuReference) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  const LlamaConfig config = family_config("qwen3", "Qwen3ForCausalLM");
  for (DType kv : {DType::bf16, DType::int8}) {
    const CudaBackendOptions options = small_options(kv);
    auto gpu = make_cuda_backend(config, random_tensor_source(config, 9), options);
    auto cpu = make_cpu_backend({config, random_llama_weights(config, 9)}, gpu->kv_layout().slots(),
                                16, options.quant);
    expect_dense_agreement(run_sequence(*gpu, *cpu, true), kv == DType::bf16,
                           "qwen3, " + std::string(dtype_name(kv)) + " cache");
  }
}

TEST(CudaFamilyBackend, Qwen3GraphReplayedDecodeMatchesEager) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  const LlamaConfig config = family_config("qwen3", "Qwen3ForCausalLM");
  CudaBackendOptions options = small_options();
  auto eager = make_cuda_backend(config, random_tensor_source(config, 4), options);
  options.cuda_graphs = true;
  auto graphed = make_cuda_backend(config, random_tensor_source(config, 4), options);
  ForwardBatch batch;
  batch.sequences.push_back({sequence_tokens(40, 1), 0, {0, 1, 2, 3}, false});
  batch.sequences.push_back({sequence_tokens(90, 2), 0, {10, 11, 12, 13, 14, 15, 16}, false});
  expect_graph_replay_matches_eager(*eager, *graphed, batch, 10, "qwen3");
}

// small_llama_json's model as Qwen3-MoE writes it: `experts` experts of `inter` channels, top 4,
// renormalised, every layer sparse.
nlohmann::json qwen3_moe_json(int experts, int inter = 384) {
  nlohmann::json j = small_llama_json(1024);
  j["architectures"] = {"Qwen3MoeForCausalLM"};
  j["model_type"] = "qwen3_moe";
  j["moe_intermediate_size"] = inter;
  j["num_experts"] = experts;
  j["num_experts_per_tok"] = 4;
  j["norm_topk_prob"] = true;
  j["decoder_sparse_step"] = 1;
  j["mlp_only_layers"] = nlohmann::json::array();
  return j;
}

TEST(CudaFamilyBackend, Qwen3MoeWithEveryExpertChosenMatchesTheCpuReference) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  const LlamaConfig config =
      parse_llama_config(qwen3_moe_json(4), "small-qwen3-moe", "test config");
  ASSERT_TRUE(config.model.is_moe());
  const CudaBackendOptions options = small_options();
  auto gpu = make_cuda_backend(config, random_tensor_source(config, 7), options);
  auto cpu = make_cpu_backend({config, random_llama_weights(config, 7)}, gpu->kv_layout().slots(),
                              16, options.quant);
  expect_dense_agreement(run_sequence(*gpu, *cpu, true), true, "qwen3_moe, 4 of 4 experts");
}

// Qwen3-MoE with many narrow experts (32 of `inter`, top 4) against the CPU reference. The
// decode steps, the verification and the prefill take the one-launch grouped GEMM
// (model/engine_moe_rules.hpp); at 352 channels its last k step is partial. With the A/B switch
// at per_expert (engine_tuning.hpp) the 3-sequence decode steps and the verification take the
// grouped CUDA-core kernels and the prefill a cuBLASLt GEMM an expert.
// Routing near-ties flip on bf16 (as cuda_moe_backend_test.cpp's top-2 models): at most a fifth
// of the rows below cosine 0.999, top-1 on 85%. Decode steps replayed from CUDA graphs (the
// one-launch GEMMs or the grouped kernels captured) pick what eager launches pick.
void check_many_narrow_experts(int inter, MoeGemmChoice choice) {
  const LlamaConfig config =
      parse_llama_config(qwen3_moe_json(32, inter), "small-qwen3-moe-32", "test config");
  CudaBackendOptions options = small_options();
  options.tuning.moe_gemm = choice;
  auto gpu = make_cuda_backend(config, random_tensor_source(config, 8), options);
  auto cpu = make_cpu_backend({config, random_llama_weights(config, 8)}, gpu->kv_layout().slots(),
                              16, options.quant);
  const Agreement a = run_sequence(*gpu, *cpu, true);
  int below = 0;
  for (double c : a.cosines) below += c < 0.999;
  std::cout << "qwen3_moe 32 experts of " << inter << " top 4, switch " << static_cast<int>(choice)
            << ": min cosine " << a.min_cosine << ", rows below 0.999: " << below << " of "
            << a.rows << ", top-1 " << a.top1_same << "\n";
  EXPECT_LE(below, a.rows / 5);
  EXPECT_GE(a.top1_same, a.rows * 85 / 100);

  CudaBackendOptions graph_options = options;
  graph_options.cuda_graphs = true;
  auto graphed = make_cuda_backend(config, random_tensor_source(config, 8), graph_options);
  auto eager = make_cuda_backend(config, random_tensor_source(config, 8), options);
  ForwardBatch batch;
  batch.sequences.push_back({sequence_tokens(30, 1), 0, {0, 1, 2}, false});
  batch.sequences.push_back({sequence_tokens(50, 2), 0, {5, 6, 7, 8}, false});
  batch.sequences.push_back({sequence_tokens(20, 3), 0, {9, 10}, false});
  expect_graph_replay_matches_eager(*eager, *graphed, batch, 8, "qwen3_moe, many experts");
}

TEST(CudaFamilyBackend, Qwen3MoeOneLaunchGroupedGemmMatchesTheCpuReferenceAndReplays) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  ASSERT_EQ(engine_moe_form(3, 32, 4, 256, 384), MoeExpertForm::grouped_gemm);
  ASSERT_EQ(engine_moe_form(327, 32, 4, 256, 384), MoeExpertForm::grouped_gemm);
  check_many_narrow_experts(384, MoeGemmChoice::automatic);
  check_many_narrow_experts(352, MoeGemmChoice::automatic);  // 5.5 k steps of 64
}

TEST(CudaFamilyBackend, Qwen3MoeGroupedKernelsAndPerExpertGemmsMatchTheCpuReference) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  ASSERT_EQ(engine_moe_form_without_grouped_gemm(3, 32, 4), MoeExpertForm::grouped);
  ASSERT_EQ(engine_moe_form_without_grouped_gemm(12, 32, 4), MoeExpertForm::grouped);
  ASSERT_EQ(engine_moe_form_without_grouped_gemm(327, 32, 4), MoeExpertForm::gemm);
  check_many_narrow_experts(384, MoeGemmChoice::per_expert);
}

TEST(CudaFamilyBackend, Phi3CheckpointMatchesTheCpuReference) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  testing::ScratchDir dir("cuda_phi3");
  const LlamaConfig config = family_config("phi3", "Phi3ForCausalLM");
  InitWeightsOptions init;
  init.out_dir = dir / "ckpt";
  init.seed = 3;
  init_weights(config, init);
  const Checkpoint checkpoint = Checkpoint::open(init.out_dir);
  ASSERT_NE(checkpoint.find("model.layers.2.self_attn.qkv_proj.weight"), nullptr);
  const CudaBackendOptions options = small_options();
  auto gpu = make_cuda_backend(config, checkpoint_tensor_source(checkpoint), options);
  auto cpu = make_cpu_backend({config, load_llama_weights(checkpoint, config)},
                              gpu->kv_layout().slots(), 16, options.quant);
  expect_dense_agreement(run_sequence(*gpu, *cpu), true, "phi3 checkpoint");
}

}  // namespace
}  // namespace inferlab::engine
#endif  // INFERLAB_ENGINE_HAVE_CUDA
