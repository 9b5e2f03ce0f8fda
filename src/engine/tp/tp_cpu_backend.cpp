#include "engine/tp/tp_cpu_backend.hpp"

#include <exception>
#include <stdexcept>
#include <thread>

#include "engine/tp/shard.hpp"

namespace inferlab::engine {

std::unique_ptr<CpuBackend> make_cpu_rank(const LlamaModel& model, int64_t rank, int64_t ranks,
                                          int64_t block_size, int64_t num_blocks,
                                          const QuantConfig& quant) {
  return std::make_unique<CpuBackend>(rank_config(model.config, ranks),
                                      shard_weights(model.weights, model.config, rank, ranks),
                                      block_size, num_blocks, quant);
}

TensorParallelCpuBackend::TensorParallelCpuBackend(const LlamaModel& model, int64_t ranks,
                                                   int64_t block_size, int64_t num_blocks,
                                                   QuantConfig quant)
    : config_(model.config), group_(std::make_unique<HostCommunicator>(static_cast<int>(ranks))) {
  for (int64_t r = 0; r < ranks; ++r) {
    ranks_.push_back(make_cpu_rank(model, r, ranks, block_size, num_blocks, quant));
    ranks_.back()->join_group(group_.get(), static_cast<int>(r));
  }
  layout_ = ranks_.front()->kv_layout();
  layout_.num_kv_heads = config_.model.num_kv_heads;
}

ForwardResult TensorParallelCpuBackend::forward(const ForwardBatch& batch) {
  // Checked once here, so that no rank fails alone in the middle of a collective.
  validate_batch(batch, config_, layout_);
  const size_t n = ranks_.size();
  std::vector<ForwardResult> results(n);
  std::vector<std::exception_ptr> errors(n);
  {
    std::vector<std::jthread> threads;
    threads.reserve(n);
    try {
      for (size_t r = 0; r < n; ++r) {
        threads.emplace_back([&, r] {
          try {
            results[r] = ranks_[r]->forward(batch);
          } catch (...) {
            errors[r] = std::current_exception();
            group_->abort();
          }
        });
      }
    } catch (...) {  // a thread that could not start: release the started ones, then fail
      group_->abort();
      threads.clear();
      group_->reset();
      throw;
    }
  }  // joined
  group_->reset();
  // The first rank's own failure, not a peer's "group aborted" (which it caused).
  for (size_t r = 0; r < n; ++r) {
    if (!errors[r]) continue;
    try {
      std::rethrow_exception(errors[r]);
    } catch (const std::runtime_error& e) {
      if (std::string(e.what()).find("group aborted") == std::string::npos) throw;
    }
  }
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  return std::move(results.front());  // every rank holds the same logits
}

void TensorParallelCpuBackend::fill_kv_cache_random(uint64_t seed) {
  for (size_t r = 0; r < ranks_.size(); ++r) ranks_[r]->fill_kv_cache_random(seed + r);
}

int64_t TensorParallelCpuBackend::kv_block_host_bytes() const {
  int64_t bytes = 0;
  for (const auto& rank : ranks_) bytes += rank->kv_block_host_bytes();
  return bytes;
}

std::unique_ptr<KvHostCopy> TensorParallelCpuBackend::copy_kv_blocks_to_host(
    std::span<const int32_t> blocks) {
  std::vector<std::byte> host;
  for (const auto& rank : ranks_) {
    const std::unique_ptr<KvHostCopy> part = rank->copy_kv_blocks_to_host(blocks);
    host.insert(host.end(), part->bytes().begin(), part->bytes().end());
  }
  return std::make_unique<HeapKvHostCopy>(std::move(host));
}

void TensorParallelCpuBackend::copy_kv_blocks_from_host(std::span<const int32_t> blocks,
                                                        std::span<const std::byte> host) {
  check_swap_blocks(blocks, layout_, static_cast<int64_t>(host.size()), kv_block_host_bytes());
  std::vector<int64_t> block_bytes;
  for (const auto& rank : ranks_) block_bytes.push_back(rank->kv_block_host_bytes());
  const auto parts = rank_parts_of_host_copy(host, block_bytes);
  for (size_t r = 0; r < ranks_.size(); ++r) ranks_[r]->copy_kv_blocks_from_host(blocks, parts[r]);
}

std::unique_ptr<TensorParallelCpuBackend> make_tp_cpu_backend(LlamaModel model, int64_t ranks,
                                                              int64_t max_tokens,
                                                              int64_t block_size,
                                                              const QuantConfig& quant) {
  if (max_tokens < 1 || block_size < 1) {
    throw std::invalid_argument("make_tp_cpu_backend: max_tokens and block_size must be positive");
  }
  check_tensor_parallel(model.config.model, ranks);
  quantize_for_cpu(model, block_size, quant);
  const int64_t blocks = (max_tokens + block_size - 1) / block_size;
  return std::make_unique<TensorParallelCpuBackend>(model, ranks, block_size, blocks, quant);
}

}  // namespace inferlab::engine
