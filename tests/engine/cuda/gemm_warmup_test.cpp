// The CUDA backend's GEMM warm-up (CudaBackendOptions::warm_gemm_rows): after it, passes of any row
// count up to the batch-token limit (prefills, mixed batches, the LM head over any number of
// sequences) meet no cuBLASLt shape without a plan, and the warm-up leaves no state behind: the
// tokens are those of a backend made without it, in bf16 and every quantized format. A quantized
// LM head that the tensor cores cannot take is refused when the backend is made. Without a GPU
// the tests skip; a CPU backend has no GEMM plans.
#include <gtest/gtest.h>

#include "engine/cpu/cpu_backend.hpp"
#include "engine/cuda/small_llama_config.hpp"
#include "engine/cuda_backend.hpp"
#include "engine/init_weights.hpp"
#include "util/dtype.hpp"
#include "util/error.hpp"

namespace inferlab::engine {
namespace {

// A vocabulary of 1024: the LM head of the quantized-input formats (fp8, W8A8) takes the tensor
// cores only for outputs that are a multiple of 16, and the warm-up runs it at up to 256 rows.
LlamaConfig warmup_config(int64_t vocab_size = 1024) {
  return parse_llama_config(small_llama_json(vocab_size), "warmup", "test");
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
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 37 + seed) % 1024);
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

CudaBackendOptions warmup_options(DType weights, DType activations) {
  CudaBackendOptions options;
  options.max_kv_tokens = 16 * 16;
  options.max_sequences = 4;
  options.max_batch_tokens = 64;
  options.quant.weights = weights;
  options.quant.activations = activations;
  options.quant.calibration_tokens = 64;  // W8A8's statistics pass, within the batch limit
  return options;
}

// A cold and a warmed backend of the same weights: the warmed one meets no new shape in the
// passes, and both give the same tokens. Returns the warmed backend's plans.
int64_t expect_warm_like_cold(DType weights, DType activations) {
  const LlamaConfig config = warmup_config();
  CudaBackendOptions options = warmup_options(weights, activations);
  auto cold = make_cuda_backend(config, random_tensor_source(config, 6), options);
  const int64_t cold_plans = cuda_gemm_plans(*cold);
  options.warm_gemm_rows = 64;
  auto warm = make_cuda_backend(config, random_tensor_source(config, 6), options);
  const int64_t warmed = cuda_gemm_plans(*warm);
  const std::vector<int32_t> cold_tokens = run_passes(*cold);
  EXPECT_GT(cuda_gemm_plans(*cold), cold_plans) << dtype_name(weights);
  EXPECT_EQ(run_passes(*warm), cold_tokens) << dtype_name(weights);
  EXPECT_EQ(cuda_gemm_plans(*warm), warmed) << dtype_name(weights);
  return warmed;
}

TEST(CudaGemmWarmup, AWarmedBackendMeetsNoNewShapeAndGivesTheSameTokens) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  // bf16 weights: cuBLASLt from 3 rows (1-2 take the streaming GEMV), 4 projections to 64 rows,
  // the LM head to 256 (the logit buffer's rows): 62 · 4 + 254 shapes.
  EXPECT_EQ(expect_warm_like_cold(DType::bf16, DType::bf16), 62 * 4 + 254);
}

// The quantized formats' tensor-core paths (fp8 with quantized inputs, int8 and int4 weights
// dequantized in chunks, W8A8's int8 GEMM) warm up from zero inputs and leave nothing behind.
TEST(CudaGemmWarmup, QuantizedFormatsWarmUpAndGiveTheSameTokens) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  for (const auto& [weights, activations] :
       {std::pair{DType::fp8, DType::bf16}, std::pair{DType::int8, DType::bf16},
        std::pair{DType::int4, DType::bf16}, std::pair{DType::int8, DType::int8}}) {
    EXPECT_GT(expect_warm_like_cold(weights, activations), 0) << dtype_name(weights);
  }
}

// Any other vocabulary is refused when such a backend is made, whether it warms up or not: a
// pass sampling over 32 sequences would meet the same refusal in the middle of serving.
TEST(CudaGemmWarmup, AQuantizedLmHeadOfAnOddVocabularyIsRefusedUpFront) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  const LlamaConfig odd = warmup_config(1000);
  for (const auto& [weights, activations] :
       {std::pair{DType::fp8, DType::bf16}, std::pair{DType::int8, DType::int8}}) {
    const CudaBackendOptions options = warmup_options(weights, activations);
    EXPECT_THROW(make_cuda_backend(odd, random_tensor_source(odd, 6), options), InputError)
        << dtype_name(weights);
  }
  // Weight-only int8 dequantizes to bf16 GEMMs, which take any vocabulary.
  const CudaBackendOptions int8 = warmup_options(DType::int8, DType::bf16);
  EXPECT_NO_THROW(make_cuda_backend(odd, random_tensor_source(odd, 6), int8));
}

#endif

}  // namespace
}  // namespace inferlab::engine
