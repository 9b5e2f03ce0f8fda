#pragma once
// The CUDA backend over several GPUs of one machine: Megatron-style tensor parallelism
// (engine/tp/shard.hpp), one CudaBackend per GPU holding its shard of the weights and of the KV
// heads, under the same block tables. Each rank's pass runs on the host thread that owns its GPU
// (rank_threads.hpp); the ranks meet in RankCollectives (the one-shot all-reduce or NCCL after
// the O and down projections, NCCL's all-gather after the vocab-parallel LM head), captured in
// the decode graphs like the rest. One process with a thread per GPU rather than a process per
// GPU: the scheduler, tokenizer and block tables stay single, the group is made in-process
// (ncclCommInitAll, peer access for the one-shot kernel), and no rank can outlive the others.
#include <memory>
#include <vector>

#include "engine/cuda/cuda_backend_impl.hpp"
#include "engine/cuda/rank_threads.hpp"

namespace inferlab::engine::cuda {

class TensorParallelCudaBackend final : public Backend {
 public:
  // `ranks` already built (each on its own thread of `threads`), all with the same KV blocks.
  TensorParallelCudaBackend(const LlamaConfig& config, std::unique_ptr<RankThreads> threads,
                            std::vector<std::unique_ptr<CudaBackend>> ranks,
                            std::vector<std::shared_ptr<RankCollectives>> collectives);
  ~TensorParallelCudaBackend() override;

  const LlamaConfig& config() const override { return config_; }
  // The cache as the scheduler sees it; num_kv_heads counts every rank's.
  const KvCacheLayout& kv_layout() const override { return layout_; }
  ForwardResult forward(const ForwardBatch& batch) override;
  std::vector<int32_t> forward_sample(const ForwardBatch& batch,
                                      std::span<const SampleSpec> specs) override;
  std::vector<int32_t> forward_sample_rows(const ForwardBatch& batch,
                                           std::span<const SampleSpec> row_specs) override;
  // Rank 0's device time and profile (every rank runs the same kernels in step).
  double last_forward_device_s() const override;
  void set_profiling(bool on) override;
  std::vector<KernelClassTime> last_forward_profile() const override;
  RoutingStats last_forward_routing() const override;  // rank 0's (every rank routes alike)
  void fill_kv_cache_random(uint64_t seed) override;
  // Every rank's share of a block, rank after rank.
  int64_t kv_block_host_bytes() const override;
  std::unique_ptr<KvHostCopy> copy_kv_blocks_to_host(std::span<const int32_t> blocks) override;
  void copy_kv_blocks_from_host(std::span<const int32_t> blocks,
                                std::span<const std::byte> host) override;
  void warm_gemms(int64_t max_rows);
  int64_t gemm_plans() const;

 private:
  // task(r) on every rank's thread; a failure aborts the group's collectives so that no rank
  // waits for the failed one, and leaves the backend refusing every later call.
  void on_every_rank(const std::function<void(int)>& task);

  LlamaConfig config_;
  KvCacheLayout layout_;
  std::unique_ptr<RankThreads> threads_;
  std::vector<std::unique_ptr<CudaBackend>> ranks_;
  std::vector<std::shared_ptr<RankCollectives>> collectives_;
  bool broken_ = false;
};

// What tensor parallelism on GPUs refuses, whether its ranks are threads or processes:
// InputError when the model does not split `ranks` ways, there is no GPU, or for what it does not
// run yet (W8A8, GPTQ checkpoints).
void check_tensor_parallel_cuda(const LlamaConfig& config, const CudaBackendOptions& requested,
                                int64_t ranks);

}  // namespace inferlab::engine::cuda
