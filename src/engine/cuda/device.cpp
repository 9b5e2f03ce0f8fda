// Whether a CUDA GPU is there, asked without failing when the driver is absent.
#include <cuda_runtime.h>

#include "engine/cuda_backend.hpp"

namespace inferlab::engine {

bool cuda_device_available() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clears the sticky "no driver" error
    return false;
  }
  return count > 0;
}

std::string cuda_device_name() {
  if (!cuda_device_available()) return "";
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return "";
  return prop.name;
}

}  // namespace inferlab::engine
