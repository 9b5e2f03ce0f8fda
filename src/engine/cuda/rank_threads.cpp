#include "engine/cuda/rank_threads.hpp"

#include <cuda_runtime.h>

#include <utility>

#include "engine/cuda/cuda_check.hpp"

namespace inferlab::engine::cuda {

RankThreads::RankThreads(int ranks) {
  threads_.reserve(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) threads_.emplace_back([this, r] { serve(r); });
  // Each thread's first task makes its GPU current.
  run([](int rank) { INFERLAB_CUDA_CHECK(cudaSetDevice(rank)); });
}

RankThreads::~RankThreads() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void RankThreads::run(const std::function<void(int)>& task,
                      const std::function<void()>& on_failure) {
  std::unique_lock lock(mutex_);
  task_ = &task;
  on_failure_ = on_failure ? &on_failure : nullptr;
  first_error_ = nullptr;
  running_ = ranks();
  ++generation_;
  wake_.notify_all();
  finished_.wait(lock, [this] { return running_ == 0; });
  task_ = nullptr;
  on_failure_ = nullptr;
  if (first_error_) std::rethrow_exception(std::exchange(first_error_, nullptr));
}

void RankThreads::serve(int rank) {
  int64_t seen = 0;
  while (true) {
    const std::function<void(int)>* task = nullptr;
    const std::function<void()>* on_failure = nullptr;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      task = task_;
      on_failure = on_failure_;
    }
    try {
      (*task)(rank);
    } catch (...) {
      bool first = false;
      {
        std::lock_guard lock(mutex_);
        first = first_error_ == nullptr;
        if (first) first_error_ = std::current_exception();
      }
      if (first && on_failure != nullptr) (*on_failure)();
    }
    std::lock_guard lock(mutex_);
    if (--running_ == 0) finished_.notify_all();
  }
}

}  // namespace inferlab::engine::cuda
