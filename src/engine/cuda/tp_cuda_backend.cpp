#include "engine/cuda/tp_cuda_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "engine/tp/shard.hpp"
#include "util/error.hpp"

namespace inferlab::engine::cuda {

TensorParallelCudaBackend::TensorParallelCudaBackend(
    const LlamaConfig& config, std::unique_ptr<RankThreads> threads,
    std::vector<std::unique_ptr<CudaBackend>> ranks,
    std::vector<std::shared_ptr<RankCollectives>> collectives)
    : config_(config),
      threads_(std::move(threads)),
      ranks_(std::move(ranks)),
      collectives_(std::move(collectives)) {
  layout_ = ranks_.front()->kv_layout();
  layout_.num_kv_heads = config_.model.num_kv_heads;
}

TensorParallelCudaBackend::~TensorParallelCudaBackend() {
  // Each rank's graphs, streams and buffers are released on the thread that owns its GPU.
  try {
    threads_->run([this](int r) { ranks_[static_cast<size_t>(r)].reset(); });
  } catch (...) {
  }
}

void TensorParallelCudaBackend::on_every_rank(const std::function<void(int)>& task) {
  if (broken_) {
    throw std::runtime_error(
        "tensor-parallel CUDA backend: a rank failed earlier and the group was aborted");
  }
  try {
    threads_->run(task, [this] {
      broken_ = true;
      collectives_.front()->abort_group();
    });
  } catch (...) {
    broken_ = true;
    throw;
  }
}

ForwardResult TensorParallelCudaBackend::forward(const ForwardBatch& batch) {
  // Checked once here, so that no rank fails alone in the middle of a collective.
  validate_batch(batch, config_, layout_);
  ForwardResult result;
  on_every_rank([&](int r) {
    ForwardResult mine = ranks_[static_cast<size_t>(r)]->forward(batch);
    if (r == 0) result = std::move(mine);  // rank 0 alone copies the logits out
  });
  return result;
}

std::vector<int32_t> TensorParallelCudaBackend::forward_sample(const ForwardBatch& batch,
                                                               std::span<const SampleSpec> specs) {
  if (specs.size() != batch.sequences.size()) {
    throw std::invalid_argument("forward_sample: one SampleSpec per sequence is needed");
  }
  validate_batch(batch, config_, layout_);
  std::vector<int32_t> ids;
  // Every rank samples the same gathered logits with the same draws, so all pick the same ids.
  on_every_rank([&](int r) {
    std::vector<int32_t> mine = ranks_[static_cast<size_t>(r)]->forward_sample(batch, specs);
    if (r == 0) ids = std::move(mine);
  });
  return ids;
}

std::vector<int32_t> TensorParallelCudaBackend::forward_sample_rows(
    const ForwardBatch& batch, std::span<const SampleSpec> row_specs) {
  validate_batch(batch, config_, layout_);
  check_row_specs(batch, row_specs);
  std::vector<int32_t> ids;
  // As forward_sample: every rank picks the same ids from the same gathered rows.
  on_every_rank([&](int r) {
    std::vector<int32_t> mine =
        ranks_[static_cast<size_t>(r)]->forward_sample_rows(batch, row_specs);
    if (r == 0) ids = std::move(mine);
  });
  return ids;
}

double TensorParallelCudaBackend::last_forward_device_s() const {
  return ranks_.front()->last_forward_device_s();
}

void TensorParallelCudaBackend::set_profiling(bool on) {
  on_every_rank([&](int r) { ranks_[static_cast<size_t>(r)]->set_profiling(on); });
}

std::vector<KernelClassTime> TensorParallelCudaBackend::last_forward_profile() const {
  return ranks_.front()->last_forward_profile();
}

RoutingStats TensorParallelCudaBackend::last_forward_routing() const {
  return ranks_.front()->last_forward_routing();
}

void TensorParallelCudaBackend::fill_kv_cache_random(uint64_t seed) {
  on_every_rank([&](int r) { ranks_[static_cast<size_t>(r)]->fill_kv_cache_random(seed + r); });
}

int64_t TensorParallelCudaBackend::kv_block_host_bytes() const {
  int64_t bytes = 0;
  for (const auto& rank : ranks_) bytes += rank->kv_block_host_bytes();
  return bytes;
}

std::unique_ptr<KvHostCopy> TensorParallelCudaBackend::copy_kv_blocks_to_host(
    std::span<const int32_t> blocks) {
  check_swap_blocks(blocks, layout_);
  std::vector<std::unique_ptr<KvHostCopy>> parts(ranks_.size());
  on_every_rank([&](int r) {
    parts[static_cast<size_t>(r)] = ranks_[static_cast<size_t>(r)]->copy_kv_blocks_to_host(blocks);
  });
  std::vector<std::byte> host;
  for (const auto& part : parts)
    host.insert(host.end(), part->bytes().begin(), part->bytes().end());
  return std::make_unique<HeapKvHostCopy>(std::move(host));
}

void TensorParallelCudaBackend::copy_kv_blocks_from_host(std::span<const int32_t> blocks,
                                                         std::span<const std::byte> host) {
  check_swap_blocks(blocks, layout_, static_cast<int64_t>(host.size()), kv_block_host_bytes());
  std::vector<int64_t> block_bytes;
  for (const auto& rank : ranks_) block_bytes.push_back(rank->kv_block_host_bytes());
  const auto parts = rank_parts_of_host_copy(host, block_bytes);
  on_every_rank([&](int r) {
    ranks_[static_cast<size_t>(r)]->copy_kv_blocks_from_host(blocks, parts[static_cast<size_t>(r)]);
  });
}

void TensorParallelCudaBackend::warm_gemms(int64_t max_rows) {
  on_every_rank([&](int r) { ranks_[static_cast<size_t>(r)]->warm_gemms(max_rows); });
}

int64_t TensorParallelCudaBackend::gemm_plans() const {
  return static_cast<int64_t>(ranks_.front()->gemm_plans());
}

}  // namespace inferlab::engine::cuda

namespace inferlab::engine {

namespace cuda {

void check_tensor_parallel_cuda(const LlamaConfig& config, const CudaBackendOptions& requested,
                                int64_t ranks) {
  check_tensor_parallel(config.model, ranks);
  if (!cuda_device_available()) {
    throw InputError("--device cuda: no CUDA GPU is visible on this machine; use --device cpu");
  }
  if (requested.quant.activations == DType::int8) {
    throw InputError(fmt::format(
        "--tp {} --activations int8: SmoothQuant's calibration runs the whole bf16 model on one "
        "GPU, which tensor parallelism does not do yet; use weight-only formats with --tp",
        ranks));
  }
  if (config.gptq) {
    throw InputError(fmt::format(
        "--tp {}: GPTQ checkpoints are not cut into shards yet; run a bf16 checkpoint (it can be "
        "quantized at load with --weights)",
        ranks));
  }
}

}  // namespace cuda

std::unique_ptr<Backend> make_tp_cuda_backend(const LlamaConfig& config, const TensorSource& source,
                                              const CudaBackendOptions& requested, int64_t ranks) {
  cuda::check_tensor_parallel_cuda(config, requested, ranks);
  const LlamaConfig local = rank_config(config, ranks);
  const int n = static_cast<int>(ranks);
  std::vector<std::shared_ptr<cuda::RankCollectives>> collectives = cuda::make_rank_collectives(
      n, requested.tuning.one_shot_max_bytes, requested.tuning.two_shot_max_bytes);
  auto threads = std::make_unique<cuda::RankThreads>(n);
  std::vector<CudaBackendOptions> options(static_cast<size_t>(n));
  std::vector<int64_t> blocks(static_cast<size_t>(n));
  threads->run([&](int r) {
    CudaBackendOptions& o = options[static_cast<size_t>(r)];
    o = cuda::resolved_options(local, requested);
    o.collectives = collectives[static_cast<size_t>(r)];
    cuda::check_backend_options(local, o);
    blocks[static_cast<size_t>(r)] = cuda::kv_blocks_that_fit(local, o);
  });
  // The same pool on every rank: the scheduler's block tables index all of them.
  const int64_t pool = *std::min_element(blocks.begin(), blocks.end());
  std::vector<std::unique_ptr<cuda::CudaBackend>> backends(static_cast<size_t>(n));
  threads->run([&](int r) {
    const auto i = static_cast<size_t>(r);
    const WeightLoader loader = quantizing_loader(sharded_tensor_source(source, config, r, ranks),
                                                  local, options[i].quant, nullptr);
    backends[i] = std::make_unique<cuda::CudaBackend>(local, loader, options[i], pool);
    cuda::warm_gemms_as_asked(*backends[i], options[i]);
  });
  return std::make_unique<cuda::TensorParallelCudaBackend>(
      config, std::move(threads), std::move(backends), std::move(collectives));
}

}  // namespace inferlab::engine
