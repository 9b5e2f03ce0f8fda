#pragma once
// Programmatic dependent launch (Hopper, sm_90): a kernel launched with the
// programmatic-serialization attribute may be scheduled while the previous kernel in the stream
// is still running, as soon as every block of that kernel has called allow_dependent_grid() or
// exited. Until it calls wait_for_prerequisite_grid() it may only read what no earlier kernel
// writes (weights); the wait returns once the previous grid has completed and its writes are
// visible (at once when the kernel was launched without the attribute). A kernel that waits
// first and allows after keeps the chain of dependencies transitive. CUDA graphs captured from
// such launches keep the programmatic edges. C++17; CUDA sources only.
#include <cuda_runtime.h>

#include <mutex>
#include <unordered_map>

#include "engine/cuda/cuda_check.hpp"

namespace inferlab::engine::cuda {

__device__ __forceinline__ void wait_for_prerequisite_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void allow_dependent_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Whether `kernel` runs code that has the waits: compiled from PTX of sm_90 or later. A build for
// older architectures only, run on a Hopper by JIT compilation, has kernels without them, which
// must not start early. Asked once per kernel (launches are captured in graphs or are few).
inline bool kernel_has_grid_dependency_control(const void* kernel) {
  static std::mutex mutex;
  static std::unordered_map<const void*, bool> known;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(kernel);
  if (it != known.end()) return it->second;
  cudaFuncAttributes attributes{};
  const bool has = cudaFuncGetAttributes(&attributes, kernel) == cudaSuccess &&
                   attributes.ptxVersion >= 90 && attributes.binaryVersion >= 90;
  (void)cudaGetLastError();  // a failed query is not sticky; the launch reports real errors
  known.emplace(kernel, has);
  return has;
}

// cudaLaunchKernelEx, with the programmatic-serialization attribute when `programmatic` (and the
// kernel was compiled with the waits). Should a driver refuse the attribute, the launch is made
// again without it (the kernel is correct either way). `what` names the kernel in the error.
template <typename... Params, typename... Args>
void launch_maybe_programmatic(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem_bytes,
                               bool programmatic, cudaStream_t stream, const char* what,
                               const Args&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem_bytes;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  programmatic =
      programmatic && kernel_has_grid_dependency_control(reinterpret_cast<const void*>(kernel));
  config.numAttrs = programmatic ? 1 : 0;
  cudaError_t status = cudaLaunchKernelEx(&config, kernel, args...);
  if (status != cudaSuccess && programmatic) {
    (void)cudaGetLastError();  // a launch error is not sticky
    config.numAttrs = 0;
    status = cudaLaunchKernelEx(&config, kernel, args...);
  }
  check_cuda(status, what);
}

}  // namespace inferlab::engine::cuda
