#pragma once
// Random bf16 test data for the CUDA kernel tests, and its trips to and from the device.
#include <cuda_bf16.h>

#include <cstdint>
#include <random>
#include <vector>

#include "engine/bf16.hpp"
#include "engine/cuda/cuda_check.hpp"

namespace inferlab::engine {

// Random values already rounded to bf16 (what the kernels read), as fp32 and as bits.
struct Bf16Data {
  std::vector<float> values;
  std::vector<uint16_t> bits;
};
inline Bf16Data random_bf16(size_t n, unsigned seed, float mean = 0, float spread = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(mean, spread);
  Bf16Data data;
  for (size_t i = 0; i < n; ++i) {
    data.bits.push_back(float_to_bf16(normal(rng)));
    data.values.push_back(bf16_to_float(data.bits.back()));
  }
  return data;
}

inline cuda::DeviceBuffer<__nv_bfloat16> to_device(const std::vector<uint16_t>& bits) {
  cuda::DeviceBuffer<__nv_bfloat16> buffer(bits.size());
  buffer.upload(reinterpret_cast<const __nv_bfloat16*>(bits.data()), bits.size());
  return buffer;
}

// x rounded to bf16 and back, as a kernel that stores bf16 rounds it.
inline float round_bf16(double x) {
  return bf16_to_float(float_to_bf16(static_cast<float>(x)));
}

// The reference's dot product, summed in double.
inline double dot(const float* a, const float* b, int n) {
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += double{a[i]} * b[i];
  return sum;
}

// After the device has finished: the buffer's values as fp32.
inline std::vector<float> to_host(const cuda::DeviceBuffer<__nv_bfloat16>& buffer) {
  std::vector<uint16_t> bits(buffer.size());
  INFERLAB_CUDA_CHECK(cudaDeviceSynchronize());
  buffer.download(reinterpret_cast<__nv_bfloat16*>(bits.data()), bits.size());
  std::vector<float> values;
  for (uint16_t b : bits) values.push_back(bf16_to_float(b));
  return values;
}

}  // namespace inferlab::engine
