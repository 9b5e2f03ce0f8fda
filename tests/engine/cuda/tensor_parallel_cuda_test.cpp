// Tensor parallelism across GPUs: the one-shot and NCCL all-reduces against sums worked out on
// the host (eager and replayed from a CUDA graph), and a model split over 2 GPUs against the
// same model on one. Without 2 GPUs the tests skip.
#include <gtest/gtest.h>

#include "engine/cuda_backend.hpp"

#ifdef INFERLAB_ENGINE_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/logits_agreement.hpp"
#include "engine/cuda/rank_collectives.hpp"
#include "engine/cuda/rank_threads.hpp"
#include "engine/cuda/small_llama_config.hpp"
#include "engine/sampling.hpp"
#include "util/error.hpp"

namespace inferlab::engine {
namespace {

int gpus() {
  int count = 0;
  if (!cuda_device_available() || cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

#define REQUIRE_GPUS(n) \
  if (gpus() < (n)) GTEST_SKIP() << "fewer than " << (n) << " CUDA GPUs"

// Small integers, so that every sum is exact in bf16 and the expected bits are known.
float value_of(int64_t i, int rank) {
  return static_cast<float>((i * 7 + rank * 3) % 11 - 5);
}

// One-shot sizes (16 B to the 512 KB limit) and two-shot ones (past it to 4 MB, some not a
// multiple of 8 per rank) in turn, sharing the call counter; NCCL's (an odd count).
void check_all_reduce(int ranks, int64_t one_shot_max_bytes = 512 * 1024,
                      int64_t two_shot_max_bytes = 4 << 20) {
  auto collectives = cuda::make_rank_collectives(ranks, one_shot_max_bytes, two_shot_max_bytes);
  cuda::RankThreads threads(ranks);
  const std::vector<int64_t> counts = {
      8, 4096, 8 * 37, 8192 * 4, 256 * 1024, 256 * 1024 + 8, 2 * (1 << 20), 1000001, 8 * 1001};
  for (const bool graph : {false, true}) {
    for (const int64_t count : counts) {
      std::vector<int> wrong(static_cast<size_t>(ranks), 0);
      threads.run([&](int r) {
        cuda::DeviceBuffer<__nv_bfloat16> data(static_cast<size_t>(count));
        cudaStream_t stream = nullptr;
        INFERLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        cudaGraphExec_t exec = nullptr;
        if (graph) {
          cudaGraph_t captured = nullptr;
          INFERLAB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
          collectives[static_cast<size_t>(r)]->all_reduce_sum(data.data(), count, stream);
          INFERLAB_CUDA_CHECK(cudaStreamEndCapture(stream, &captured));
          INFERLAB_CUDA_CHECK(cudaGraphInstantiate(&exec, captured, 0));
          cudaGraphDestroy(captured);
        }
        // Three rounds with different data: the one-shot kernel's alternating buffers and call
        // counter, eager and from the graph.
        for (int round = 0; round < 3; ++round) {
          std::vector<__nv_bfloat16> host(static_cast<size_t>(count));
          for (int64_t i = 0; i < count; ++i) host[i] = __float2bfloat16(value_of(i + round, r));
          // On the stream: a pageable cudaMemcpy may return before its DMA has landed, and the
          // stream (non-blocking) would not wait for it.
          INFERLAB_CUDA_CHECK(cudaMemcpyAsync(data.data(), host.data(), 2 * host.size(),
                                              cudaMemcpyHostToDevice, stream));
          if (graph) {
            INFERLAB_CUDA_CHECK(cudaGraphLaunch(exec, stream));
          } else {
            collectives[static_cast<size_t>(r)]->all_reduce_sum(data.data(), count, stream);
          }
          INFERLAB_CUDA_CHECK(cudaMemcpyAsync(host.data(), data.data(), 2 * host.size(),
                                              cudaMemcpyDeviceToHost, stream));
          INFERLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
          for (int64_t i = 0; i < count; ++i) {
            float want = 0;
            for (int p = 0; p < ranks; ++p) want += value_of(i + round, p);
            wrong[static_cast<size_t>(r)] += __bfloat162float(host[i]) != want;
          }
        }
        if (exec != nullptr) cudaGraphExecDestroy(exec);
        cudaStreamDestroy(stream);
      });
      for (int r = 0; r < ranks; ++r) {
        EXPECT_EQ(wrong[static_cast<size_t>(r)], 0)
            << ranks << " ranks, rank " << r << ", " << count << " elements, one-shot "
            << collectives[0]->one_shot_for(2 * count) << ", two-shot "
            << collectives[0]->two_shot_for(2 * count) << (graph ? ", graph" : ", eager");
      }
    }
  }
}

TEST(TensorParallelCuda, AllReducesSumExactlyOnTwoGpus) {
  REQUIRE_GPUS(2);
  check_all_reduce(2);
}

TEST(TensorParallelCuda, AllReducesSumExactlyOnFourGpus) {
  REQUIRE_GPUS(4);
  check_all_reduce(4);
}

// The two-shot kernel alone, from the smallest message up (its parts empty on some ranks).
TEST(TensorParallelCuda, TwoShotAllReducesSumExactly) {
  REQUIRE_GPUS(2);
  for (int ranks = 2; ranks <= std::min(gpus(), 4); ranks *= 2) check_all_reduce(ranks, 0, 4 << 20);
}

// A group's first collectives of each kind inside a graph capture (a decode step before any
// prefill): NCCL must not need to connect its peers then (it is told to connect them at init).
TEST(TensorParallelCuda, FirstCollectivesMayBeCapturedInAGraph) {
  REQUIRE_GPUS(2);
  auto collectives = cuda::make_rank_collectives(2, 512 * 1024);
  cuda::RankThreads threads(2);
  const int64_t gather = 4096, reduce = 1 << 20;  // the all-reduce past the one-shot limit: NCCL
  std::vector<int> wrong(2, 0);
  threads.run([&](int r) {
    cuda::DeviceBuffer<float> local(gather), gathered(2 * gather);
    cuda::DeviceBuffer<__nv_bfloat16> data(reduce);
    std::vector<float> host_local(gather, static_cast<float>(r + 1));
    std::vector<__nv_bfloat16> host_data(reduce, __float2bfloat16(static_cast<float>(r + 2)));
    cudaStream_t stream = nullptr;
    INFERLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    INFERLAB_CUDA_CHECK(cudaMemcpyAsync(local.data(), host_local.data(), 4 * gather,
                                        cudaMemcpyHostToDevice, stream));
    INFERLAB_CUDA_CHECK(
        cudaMemcpyAsync(data.data(), host_data.data(), 2 * reduce, cudaMemcpyHostToDevice, stream));
    INFERLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    cudaGraph_t captured = nullptr;
    cudaGraphExec_t exec = nullptr;
    INFERLAB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    collectives[static_cast<size_t>(r)]->all_gather(local.data(), gathered.data(), gather, stream);
    collectives[static_cast<size_t>(r)]->all_reduce_sum(data.data(), reduce, stream);
    INFERLAB_CUDA_CHECK(cudaStreamEndCapture(stream, &captured));
    INFERLAB_CUDA_CHECK(cudaGraphInstantiate(&exec, captured, 0));
    INFERLAB_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    std::vector<float> host_gathered(2 * gather);
    INFERLAB_CUDA_CHECK(cudaMemcpyAsync(host_gathered.data(), gathered.data(), 8 * gather,
                                        cudaMemcpyDeviceToHost, stream));
    INFERLAB_CUDA_CHECK(
        cudaMemcpyAsync(host_data.data(), data.data(), 2 * reduce, cudaMemcpyDeviceToHost, stream));
    INFERLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    for (int64_t i = 0; i < 2 * gather; ++i) wrong[r] += host_gathered[i] != (i < gather ? 1 : 2);
    for (int64_t i = 0; i < reduce; ++i) wrong[r] += __bfloat162float(host_data[i]) != 5.0f;
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(captured);
    cudaStreamDestroy(stream);
  });
  EXPECT_EQ(wrong[0], 0);
  EXPECT_EQ(wrong[1], 0);
}

// As tp_config's, a Mixtral of `experts` experts of the MLP's width, top `top_k`.
LlamaConfig moe_tp_config(int experts, int top_k) {
  nlohmann::json j = small_llama_json(1001);
  j["architectures"] = {"MixtralForCausalLM"};
  j["model_type"] = "mixtral";
  j["num_local_experts"] = experts;
  j["num_experts_per_tok"] = top_k;
  return parse_llama_config(j, "small-mixtral", "test config");
}

LlamaConfig tp_config(int ranks) {
  // Split 2 ways: 4 query heads and 2 KV heads; a vocabulary of 1001 splits 501 + 500, so rank
  // 1's LM head carries a padding row. Split 4 ways: hidden 512, 8 query heads and 4 KV heads
  // (GQA kept, one KV head per rank), and 1001 splits 251 + 250 × 3.
  nlohmann::json j = small_llama_json(1001);
  if (ranks == 4) {
    j["hidden_size"] = 512;
    j["intermediate_size"] = 1024;
    j["num_attention_heads"] = 8;
    j["num_key_value_heads"] = 4;
  }
  return parse_llama_config(j, "small-llama", "test config");
}

std::vector<int32_t> tokens(int count, int seed) {
  std::vector<int32_t> ids;
  for (int i = 0; i < count; ++i) ids.push_back((seed * 7919 + i * 104729) % 1001);
  return ids;
}

// Both sides run bf16 activations; the split only changes the order of the partial sums' adds
// (and their bf16 roundings) and, with int8 weights, the per-row scales of the O and down
// slices. Cosine above 0.999 and the same top token except within 3% of the top logit.
void compare_split(const QuantConfig& quant, int ranks = 2,
                   const LlamaConfig& config = tp_config(2)) {
  CudaBackendOptions options;
  options.max_kv_tokens = 64 * 16;
  options.max_sequences = 8;
  options.max_batch_tokens = 512;
  options.cuda_graphs = true;
  options.quant = quant;
  auto one = make_cuda_backend(config, random_tensor_source(config, 3), options);
  auto two = make_tp_cuda_backend(config, random_tensor_source(config, 3), options, ranks);
  ASSERT_EQ(two->kv_layout().num_kv_heads, config.model.num_kv_heads);
  ASSERT_GE(two->kv_layout().num_blocks, 64);

  ForwardBatch prefill;
  prefill.sequences.push_back(
      {tokens(300, 1),
       0,
       {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19},
       true});
  prefill.sequences.push_back({tokens(33, 2), 0, {30, 31, 32, 33}, true});  // + 16 decodes
  const ForwardResult a = one->forward(prefill), b = two->forward(prefill);
  ASSERT_EQ(a.logits.size(), b.logits.size());
  double min_cosine = 1;
  int same = 0, beyond_noise = 0;
  const int64_t rows = static_cast<int64_t>(a.logits.size()) / a.vocab_size;
  for (int64_t r = 0; r < rows; ++r) {
    min_cosine = std::min(min_cosine, cosine(b.row(r), a.row(r)));
    const int32_t top_one = argmax(a.row(r)), top_two = argmax(b.row(r));
    same += top_one == top_two;
    beyond_noise +=
        b.row(r)[static_cast<size_t>(top_two)] - b.row(r)[static_cast<size_t>(top_one)] >
        0.03 * std::abs(b.row(r)[static_cast<size_t>(top_two)]);
  }
  std::cout << quant.describe() << ": TP " << ranks << " vs 1 GPU, min cosine " << min_cosine
            << ", top-1 " << same << " of " << rows << "\n";
  EXPECT_GT(min_cosine, 0.999);
  EXPECT_GE(same, rows * 95 / 100);
  EXPECT_EQ(beyond_noise, 0);

  // Every row's argmax taken on the GPUs (each rank from the gathered logits; rank 0's ids come
  // back) is the argmax of the split model's own rows: 333 rows, two LM-head chunks.
  const std::vector<int32_t> argmaxes = two->forward_argmax_rows(prefill);  // same slots, values
  ASSERT_EQ(static_cast<int64_t>(argmaxes.size()), rows);
  for (int64_t r = 0; r < rows; ++r) {
    ASSERT_EQ(argmaxes[static_cast<size_t>(r)], argmax(b.row(r))) << "row " << r;
  }

  // Greedy decode from captured graphs (the collectives inside them) picks, step after step,
  // the top token of the split model's own logits of the same step.
  ForwardBatch decode = prefill;
  for (auto& s : decode.sequences) {
    s.cached_tokens = static_cast<int64_t>(s.tokens.size());
    s.tokens = {7};
    s.all_logits = false;
  }
  const std::vector<SampleSpec> greedy(2);
  for (int step = 0; step < 16; ++step) {
    const ForwardResult logits = two->forward(decode);
    const std::vector<int32_t> ids = two->forward_sample(decode, greedy);  // same slots, values
    for (size_t s = 0; s < 2; ++s) {
      ASSERT_EQ(ids[s], argmax(logits.last(s))) << "step " << step << ", sequence " << s;
      decode.sequences[s].cached_tokens += 1;
      decode.sequences[s].tokens = {ids[s]};
    }
  }
}

TEST(TensorParallelCuda, TwoGpusMatchOneInBf16) {
  REQUIRE_GPUS(2);
  compare_split(QuantConfig{});
}

// A mixture of experts split 2 ways (each expert's channels halved, the router whole): with
// every expert chosen (4 of 4) no near-tie can send a token elsewhere, so the split matches one
// GPU as the dense model does; the prefill's router is the GEMM form (300 tokens), the decode's
// experts the GEMM form too (8 slots over 4 experts).
TEST(TensorParallelCuda, TwoGpusMatchOneForAMixtureOfExperts) {
  REQUIRE_GPUS(2);
  compare_split(QuantConfig{}, 2, moe_tp_config(4, 4));
}

TEST(TensorParallelCuda, TwoGpusMatchOneWithInt8Weights) {
  REQUIRE_GPUS(2);
  QuantConfig quant;
  quant.weights = DType::int8;
  compare_split(quant);
}

TEST(TensorParallelCuda, FourGpusMatchOneInBf16) {
  REQUIRE_GPUS(4);
  compare_split(QuantConfig{}, 4, tp_config(4));
}

TEST(TensorParallelCuda, RefusesMoreRanksThanGpus) {
  if (gpus() < 1) GTEST_SKIP() << "no CUDA GPU";
  nlohmann::json j = small_llama_json(1024);
  j["num_attention_heads"] = 64;
  j["num_key_value_heads"] = 64;
  j["head_dim"] = 4;
  j["intermediate_size"] = 64 * 8;
  const LlamaConfig config = parse_llama_config(j, "wide", "test config");
  try {
    make_tp_cuda_backend(config, random_tensor_source(config, 1), CudaBackendOptions{}, 64);
    FAIL() << "64 ranks on " << gpus() << " GPUs were not refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("this machine has"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace inferlab::engine
#endif
