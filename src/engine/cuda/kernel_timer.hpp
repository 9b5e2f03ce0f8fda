#pragma once
// Device time of a forward pass by CUDA events: always its total (an event at each end), and
// with profiling on, an event after every kernel so the time between consecutive events is
// charged to that kernel's class ("gemm_qkv", "attention", ...).
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "engine/backend.hpp"

namespace inferlab::engine::cuda {

class KernelTimer {
 public:
  KernelTimer() = default;
  ~KernelTimer();
  KernelTimer(const KernelTimer&) = delete;
  KernelTimer& operator=(const KernelTimer&) = delete;

  void set_enabled(bool on) { enabled_ = on; }
  bool enabled() const { return enabled_; }
  void begin(cudaStream_t stream);
  // After a launch: charges the time since the previous event to `name`, with the bytes moved
  // and the floating-point operations of that launch (ignored unless enabled).
  void mark(const char* name, double bytes, double flops = 0);
  void end(cudaStream_t stream);
  // After the stream has synchronised.
  double total_s() const;
  std::vector<KernelClassTime> classes() const;

 private:
  cudaEvent_t event(size_t index);
  struct Mark {
    const char* name;
    double bytes, flops;
  };
  bool enabled_ = false;
  cudaStream_t stream_ = nullptr;
  std::vector<cudaEvent_t> events_;  // [0] begin, then one per mark, then end
  std::vector<Mark> marks_;
  size_t used_ = 0;
};

}  // namespace inferlab::engine::cuda
