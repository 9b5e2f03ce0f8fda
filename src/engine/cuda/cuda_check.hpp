#pragma once
// Error checking and device memory for the engine's CUDA backend. Included by the kernels (.cu,
// C++17) and by the host code (.cpp, C++20), so it keeps to C++17.
#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace inferlab::engine::cuda {

inline void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(status));
  }
}

// Kernel attributes (the dynamic shared-memory limit, the carveout) belong to the current GPU's
// context, so a process that drives several GPUs (tensor parallelism) must set them on each.
// `configure()` runs the first time a call site reaches each GPU (`configured` is the site's own
// static mask of GPUs done); running it twice is harmless, so no lock is taken.
template <typename Configure>
void once_per_device(std::atomic<uint64_t>& configured, Configure configure) {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  const uint64_t bit = uint64_t{1} << (device & 63);
  if ((configured.load(std::memory_order_acquire) & bit) != 0) return;
  configure();
  configured.fetch_or(bit, std::memory_order_acq_rel);
}

// A device allocation of `count` elements of T, freed with its owner.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) : count_(count) {
    if (count > 0)
      check_cuda(cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T)), "cudaMalloc");
  }
  ~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      if (data_ != nullptr) cudaFree(data_);
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }
  void upload(const T* host, size_t count, size_t offset = 0) {
    check_cuda(cudaMemcpy(data_ + offset, host, count * sizeof(T), cudaMemcpyHostToDevice),
               "cudaMemcpy to device");
  }
  void download(T* host, size_t count, size_t offset = 0) const {
    check_cuda(cudaMemcpy(host, data_ + offset, count * sizeof(T), cudaMemcpyDeviceToHost),
               "cudaMemcpy to host");
  }

 private:
  T* data_ = nullptr;
  size_t count_ = 0;
};

}  // namespace inferlab::engine::cuda

#define INFERLAB_CUDA_CHECK(call) ::inferlab::engine::cuda::check_cuda((call), #call)
// After a kernel launch: a bad configuration shows here, not at the next synchronisation.
#define INFERLAB_CUDA_CHECK_LAUNCH() \
  ::inferlab::engine::cuda::check_cuda(cudaGetLastError(), "kernel launch")
