#pragma once
// Shared CUDA plumbing of the probe: error checks, device buffers, random fills, event timing.
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "probe/stats.hpp"

namespace inferlab::probe {

#define PROBE_CHECK(call)                                                                   \
  do {                                                                                      \
    cudaError_t probe_err_ = (call);                                                        \
    if (probe_err_ != cudaSuccess) {                                                        \
      throw std::runtime_error(std::string(#call) + ": " + cudaGetErrorString(probe_err_) + \
                               " (" __FILE__ ":" + std::to_string(__LINE__) + ")");         \
    }                                                                                       \
  } while (0)

// Checks the launch and, in debug-like use, the execution of the last kernel.
#define PROBE_CHECK_LAUNCH() PROBE_CHECK(cudaGetLastError())

// Owning device allocation (cudaMalloc, never managed memory).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) { PROBE_CHECK(cudaMalloc(&ptr_, bytes)); }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      if (ptr_) cudaFree(ptr_);
      ptr_ = o.ptr_;
      bytes_ = o.bytes_;
      o.ptr_ = nullptr;
    }
    return *this;
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Fills with uniform random values in [-1, 1) (as float, converted by the kernel's caller) so
// that nothing is timed on zeros. Words are hashed from (seed, index).
void fill_random_bytes(DeviceBuffer& buffer, uint32_t seed);
void fill_random_float(float* data, size_t n, uint32_t seed, float scale = 1.0f);

// Evicts the L2 by writing a buffer twice its size.
class L2Flusher {
 public:
  explicit L2Flusher(size_t l2_bytes);
  void flush(cudaStream_t stream = nullptr);

 private:
  DeviceBuffer buffer_;
};

struct TimingPlan {
  int warmup = 3;
  int repeats = 20;
  L2Flusher* flusher = nullptr;  // flush before each timed run when set
};

// Event-timed runs of `run` (which enqueues on the default stream); returns seconds per run.
SampleStats time_runs(const std::function<void()>& run, const TimingPlan& plan);

// Host wall-clock seconds.
double host_seconds();

}  // namespace inferlab::probe
