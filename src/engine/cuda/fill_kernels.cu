#include <cuda_bf16.h>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/fill_kernels.hpp"

namespace inferlab::engine::cuda {

namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 65535;

__device__ __forceinline__ uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <typename Store>
__global__ void fill_kernel(size_t count, uint64_t seed, Store store) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    store(i, mix(seed ^ (i * 0x2545f4914f6cdd1dull)));
  }
}

struct StoreBf16 {
  __nv_bfloat16* out;
  __device__ void operator()(size_t i, uint64_t h) const {
    out[i] = __float2bfloat16(static_cast<float>(h >> 40) / 8388608.0f - 1.0f);
  }
};
struct StoreByte {
  uint8_t* out;
  uint8_t mask;  // fp8: sign, exponent ≤ 7 (|x| < 2), any mantissa
  __device__ void operator()(size_t i, uint64_t h) const {
    out[i] = static_cast<uint8_t>(h) & mask;
  }
};
struct StoreValue {
  float* out;
  float value;
  __device__ void operator()(size_t i, uint64_t) const { out[i] = value; }
};

__global__ void poison_shared_kernel(int words) {
  extern __shared__ uint32_t smem_words[];
  for (int i = threadIdx.x; i < words; i += blockDim.x) {
    // (volatile: the stores are the point; nothing reads them in this kernel)
    reinterpret_cast<volatile uint32_t*>(smem_words)[i] = 0xffffffffu;
  }
}

unsigned blocks_for(size_t count) {
  const size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

}  // namespace

void fill_random(void* data, size_t count, DType format, uint64_t seed, cudaStream_t stream) {
  if (count == 0) return;
  if (format == DType::bf16) {
    fill_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
        count, seed, StoreBf16{static_cast<__nv_bfloat16*>(data)});
  } else {
    const uint8_t mask = format == DType::fp8 ? 0xbf : 0xff;  // 0xbf: exponent bit 3 off
    fill_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
        count, seed, StoreByte{static_cast<uint8_t*>(data), mask});
  }
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void poison_shared_memory(cudaStream_t stream) {
  int device = 0, sms = 0, bytes = 0;
  INFERLAB_CUDA_CHECK(cudaGetDevice(&device));
  INFERLAB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  INFERLAB_CUDA_CHECK(
      cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  INFERLAB_CUDA_CHECK(cudaFuncSetAttribute(poison_shared_kernel,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  // A block that takes an SM's whole shared memory per SM: each lands on an SM of its own.
  poison_shared_kernel<<<static_cast<unsigned>(sms), 1024, static_cast<size_t>(bytes), stream>>>(
      bytes / 4);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void fill_value(float* data, size_t count, float value, cudaStream_t stream) {
  if (count == 0) return;
  fill_kernel<<<blocks_for(count), kThreads, 0, stream>>>(count, 0, StoreValue{data, value});
  INFERLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace inferlab::engine::cuda
