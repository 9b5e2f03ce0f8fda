// The CUDA backend's GEMM warm-up (CudaBackendOptions::warm_gemm_rows): after it, passes of any row
// count up to the batch-token limit (prefills, mixed batches, the LM head over any number of
// sequences) meet no cuBLASLt shape without a plan, and the warm-up leaves no state behind: the
// tokens are those of a backend made without it. Without a GPU the tests skip; a CPU backend has
// no GEMM plans.
#include <gtest/gtest.h>

#include "engine/cpu/cpu_backend.hpp"
#include "engine/cuda/small_llama_config.hpp"
#include "engine/cuda_backend.hpp"
#include "engine/init_weights.hpp"

namespace inferlab::engine {
namespace {

LlamaConfig warmup_config() {
  return parse_llama_config(small_llama_json(), "warmup", "test");
}

TEST(CudaGemmWarmup, ACpuBackendHasNoGemmPlans) {
  const LlamaConfig config = warmup_config();
  const auto cpu =
      make_cpu_backend(LlamaModel{config, random_llama_weights(config, 1)}, 64, 16, QuantConfig{});
  EXPECT_EQ(cuda_gemm_plans(*cpu), 0);
}

#ifdef INFERLAB_ENGINE_HAVE_CUDA

std::vector<int32_t> tokens(int64_t count, int seed) {
  std::vector<int32_t> ids(static_cast<size_t>(count));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 37 + seed) % 1000);
  return ids;
}

// A prefill of 41 tokens beside two sequences' next tokens (43 rows), then a prefill of the
// whole batch-token limit, then a decode of the three: every pass's greedy tokens in order.
std::vector<int32_t> run_passes(Backend& backend) {
  std::vector<int32_t> out;
  ForwardBatch first;
  first.sequences.push_back({tokens(20, 1), 0, {0, 1}, false});
  first.sequences.push_back({tokens(17, 2), 0, {2, 3}, false});
  std::vector<SampleSpec> two(2);
  const auto prompts = backend.forward_sample(first, two);
  out.insert(out.end(), prompts.begin(), prompts.end());
  ForwardBatch mixed;
  mixed.sequences.push_back({{prompts[0]}, 20, {0, 1}, false});
  mixed.sequences.push_back({{prompts[1]}, 17, {2, 3}, false});
  mixed.sequences.push_back({tokens(41, 3), 0, {4, 5, 6}, false});
  std::vector<SampleSpec> three(3);
  const auto next = backend.forward_sample(mixed, three);
  out.insert(out.end(), next.begin(), next.end());
  ForwardBatch full;
  full.sequences.push_back({tokens(64, 4), 0, {7, 8, 9, 10}, false});
  std::vector<SampleSpec> one(1);
  const auto last = backend.forward_sample(full, one);
  out.insert(out.end(), last.begin(), last.end());
  return out;
}

TEST(CudaGemmWarmup, AWarmedBackendMeetsNoNewShapeAndGivesTheSameTokens) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  const LlamaConfig config = warmup_config();
  CudaBackendOptions options;
  options.max_kv_tokens = 16 * 16;
  options.max_sequences = 4;
  options.max_batch_tokens = 64;
  auto cold = make_cuda_backend(config, random_tensor_source(config, 6), options);
  EXPECT_EQ(cuda_gemm_plans(*cold), 0);
  options.warm_gemm_rows = 64;
  auto warm = make_cuda_backend(config, random_tensor_source(config, 6), options);
  const int64_t warmed = cuda_gemm_plans(*warm);
  // bf16 weights: cuBLASLt from 3 rows (1-2 take the streaming GEMV), 4 projections to 64 rows,
  // the LM head to 256 (the logit buffer's rows): 62 · 4 + 254 shapes.
  EXPECT_EQ(warmed, 62 * 4 + 254);
  const std::vector<int32_t> cold_tokens = run_passes(*cold);
  EXPECT_GT(cuda_gemm_plans(*cold), 0);
  EXPECT_EQ(run_passes(*warm), cold_tokens);
  EXPECT_EQ(cuda_gemm_plans(*warm), warmed);
}

#endif

}  // namespace
}  // namespace inferlab::engine
