#pragma once
// A Backend that passes every call to another, except chosen forward passes, which throw: the
// serving loop's handling of an engine failure, with no hook in the production code.
#include <condition_variable>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "engine/backend.hpp"

namespace inferlab::server::testing {

class FaultyBackend : public engine::Backend {
 public:
  explicit FaultyBackend(std::unique_ptr<engine::Backend> inner) : inner_(std::move(inner)) {}

  // The `n`th forward pass from now throws std::runtime_error(what) (1: the next one).
  void fail_in(int64_t n, std::string what = "injected fault") {
    std::lock_guard lock(mutex_);
    fail_at_ = passes_ + n;
    what_ = std::move(what);
  }
  // Every pass from the next on throws.
  void fail_always(std::string what) {
    std::lock_guard lock(mutex_);
    fail_at_ = passes_ + 1;
    always_ = true;
    what_ = std::move(what);
  }
  // As fail_in(n), but the failing pass first waits for release(); the future is ready once it
  // waits (the loop's thread is then inside the pass).
  std::future<void> fail_in_held(int64_t n) {
    std::lock_guard lock(mutex_);
    fail_at_ = passes_ + n;
    what_ = "injected fault";
    held_ = true;
    reached_ = std::promise<void>();
    return reached_.get_future();
  }
  void release() {
    {
      std::lock_guard lock(mutex_);
      held_ = false;
    }
    released_.notify_all();
  }

  const engine::LlamaConfig& config() const override { return inner_->config(); }
  const engine::KvCacheLayout& kv_layout() const override { return inner_->kv_layout(); }
  engine::ForwardResult forward(const engine::ForwardBatch& batch) override {
    count_pass();
    return inner_->forward(batch);
  }
  std::vector<int32_t> forward_sample(const engine::ForwardBatch& batch,
                                      std::span<const engine::SampleSpec> specs) override {
    count_pass();
    return inner_->forward_sample(batch, specs);
  }
  void fill_kv_cache_random(uint64_t seed) override { inner_->fill_kv_cache_random(seed); }
  int64_t kv_block_host_bytes() const override { return inner_->kv_block_host_bytes(); }
  std::unique_ptr<engine::KvHostCopy> copy_kv_blocks_to_host(
      std::span<const int32_t> blocks) override {
    return inner_->copy_kv_blocks_to_host(blocks);
  }
  void copy_kv_blocks_from_host(std::span<const int32_t> blocks,
                                std::span<const std::byte> host) override {
    inner_->copy_kv_blocks_from_host(blocks, host);
  }

 private:
  void count_pass() {
    std::unique_lock lock(mutex_);
    const int64_t pass = ++passes_;
    if (fail_at_ == 0 || pass < fail_at_ || (pass > fail_at_ && !always_)) return;
    if (held_) {
      reached_.set_value();
      released_.wait(lock, [&] { return !held_; });
    }
    throw std::runtime_error(what_);
  }

  std::unique_ptr<engine::Backend> inner_;
  std::mutex mutex_;
  std::condition_variable released_;
  int64_t passes_ = 0, fail_at_ = 0;  // fail_at_ 0: none
  bool always_ = false, held_ = false;
  std::string what_;
  std::promise<void> reached_;
};

}  // namespace inferlab::server::testing
