// The CUDA backend's swap of KV blocks to host memory (serve --preemption swap): blocks copied
// out, the pool scribbled over, copied back into other blocks give the same next-token logits
// as before, for the bf16 cache and for a quantized one (whose scales travel with it). Without
// a GPU the tests skip.
#include <gtest/gtest.h>

#include "engine/cuda_backend.hpp"

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include "engine/cuda/small_llama_config.hpp"

namespace inferlab::engine {
namespace {

LlamaConfig swap_config() {
  return parse_llama_config(small_llama_json(), "swap", "test");
}

std::vector<float> next_logits(Backend& backend, std::vector<int32_t> table) {
  ForwardBatch step;
  step.sequences.push_back({{7}, 40, std::move(table), false});
  const ForwardResult r = backend.forward(step);
  return std::vector<float>(r.last(0).begin(), r.last(0).end());
}

void expect_swap_round_trip(DType kv) {
  const LlamaConfig config = swap_config();
  CudaBackendOptions options;
  options.max_kv_tokens = 16 * 16;
  options.max_sequences = 4;
  options.max_batch_tokens = 256;
  options.quant.kv = kv;
  auto gpu = make_cuda_backend(config, random_tensor_source(config, 4), options);
  ForwardBatch prompt;
  std::vector<int32_t> ids(40);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i * 37 % 1000);
  prompt.sequences.push_back({ids, 0, {0, 1, 2}, false});  // blocks of 16: 40 tokens in 3
  gpu->forward(prompt);
  const std::vector<float> before = next_logits(*gpu, {0, 1, 2});
  const std::vector<int32_t> from = {0, 1, 2}, to = {9, 4, 12};
  const std::unique_ptr<KvHostCopy> copy = gpu->copy_kv_blocks_to_host(from);
  const std::span<const std::byte> host = copy->bytes();
  ASSERT_EQ(static_cast<int64_t>(host.size()), 3 * gpu->kv_block_host_bytes());
  gpu->fill_kv_cache_random(5);
  gpu->copy_kv_blocks_from_host(to, host);
  EXPECT_EQ(next_logits(*gpu, {9, 4, 12}), before);
  const std::vector<int32_t> outside = {16};
  EXPECT_THROW(gpu->copy_kv_blocks_to_host(outside), std::invalid_argument);
}

TEST(CudaKvSwap, Bf16BlocksComeBackIntoOtherBlocksUnchanged) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  expect_swap_round_trip(DType::bf16);
}

TEST(CudaKvSwap, Int8BlocksAndTheirScalesComeBackUnchanged) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA GPU";
  expect_swap_round_trip(DType::int8);
}

}  // namespace
}  // namespace inferlab::engine

#else
TEST(CudaKvSwap, NeedsACudaBuild) {
  GTEST_SKIP() << "built without CUDA";
}
#endif
