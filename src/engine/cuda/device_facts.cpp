#include "engine/cuda/device_facts.hpp"

#include <cuda_runtime.h>

#include <atomic>

#include "engine/cuda/cuda_check.hpp"

namespace inferlab::engine::cuda {

namespace {
constexpr int kMaxDevices = 64;
}  // namespace

DeviceFacts current_device_facts() {
  static std::atomic<int> cached_sms[kMaxDevices] = {};
  static std::atomic<int> cached_capability[kMaxDevices] = {};
  int device = 0;
  INFERLAB_CUDA_CHECK(cudaGetDevice(&device));
  const bool cacheable = device >= 0 && device < kMaxDevices;
  if (cacheable && cached_sms[device].load() > 0) {
    const int capability = cached_capability[device].load();
    return {cached_sms[device].load(), capability / 10, capability % 10};
  }
  DeviceFacts facts;
  INFERLAB_CUDA_CHECK(
      cudaDeviceGetAttribute(&facts.sm_count, cudaDevAttrMultiProcessorCount, device));
  INFERLAB_CUDA_CHECK(
      cudaDeviceGetAttribute(&facts.major, cudaDevAttrComputeCapabilityMajor, device));
  INFERLAB_CUDA_CHECK(
      cudaDeviceGetAttribute(&facts.minor, cudaDevAttrComputeCapabilityMinor, device));
  if (cacheable) {
    cached_capability[device].store(facts.compute_capability());
    cached_sms[device].store(facts.sm_count);  // last: a reader that sees it sees the other
  }
  return facts;
}

}  // namespace inferlab::engine::cuda
