#pragma once
// Programmatic dependent launch (Hopper, sm_90): a kernel launched with the
// programmatic-serialization attribute may be scheduled while the previous kernel in the stream
// is still running, as soon as every block of that kernel has called allow_dependent_grid() or
// exited. Until it calls wait_for_prerequisite_grid() it may only read what the kernel before it
// does not write and the ones before that have finished writing (weights; the flash decode's
// cache rows of earlier passes): a kernel allows its dependents only after its own wait, so
// every kernel but the one before has completed. The wait returns once the previous grid has
// completed and its writes are
// visible (at once when the kernel was launched without the attribute). A kernel that waits
// first and allows after keeps the chain of dependencies transitive. CUDA graphs captured from
// such launches keep the programmatic edges. C++17; CUDA sources only.
#include <cuda_runtime.h>

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

// Whether the kernels of this build have the waits: some architecture it was compiled for is
// sm_90 or later (nvcc's __CUDA_ARCH_LIST__, the same for every translation unit). A build for
// older architectures only, run on a Hopper by JIT compilation of their PTX, has kernels without
// them, which must not start early. A compile-time fact: no query at launch.
constexpr bool build_has_grid_dependency_control() {
#ifdef __CUDA_ARCH_LIST__
  constexpr int architectures[] = {__CUDA_ARCH_LIST__};
  for (int architecture : architectures) {
    if (architecture >= 900) return true;
  }
  return false;
#else
  return true;
#endif
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
  programmatic = programmatic && build_has_grid_dependency_control();
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
