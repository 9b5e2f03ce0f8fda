#pragma once
// One host thread per GPU of a tensor-parallel group, kept for the backend's life: thread r
// makes GPU r current once, and every call into rank r's backend runs on it (a CUDA context is
// current per thread, and NCCL needs every rank's launches in flight at once, which one thread
// waiting on one GPU's stream would not allow).
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace inferlab::engine::cuda {

class RankThreads {
 public:
  explicit RankThreads(int ranks);
  ~RankThreads();
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;

  int ranks() const { return static_cast<int>(threads_.size()); }
  // task(r) on every rank's thread at once; returns when all have finished. When a rank throws,
  // on_failure() runs at once on its thread (to release peers blocked in a collective), and the
  // first failing rank's exception is rethrown here after all have finished.
  void run(const std::function<void(int)>& task, const std::function<void()>& on_failure = {});

 private:
  void serve(int rank);

  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  const std::function<void(int)>* task_ = nullptr;
  const std::function<void()>* on_failure_ = nullptr;
  int64_t generation_ = 0;
  int running_ = 0;
  bool stopping_ = false;
  std::exception_ptr first_error_;
  std::vector<std::thread> threads_;
};

}  // namespace inferlab::engine::cuda
