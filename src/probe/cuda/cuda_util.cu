#include <chrono>

#include "probe/cuda/cuda_util.cuh"

namespace inferlab::probe {

namespace {
__device__ __forceinline__ uint32_t hash32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

__global__ void fill_words_kernel(uint32_t* data, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    data[i] = hash32(static_cast<uint32_t>(i) * 0x9e3779b9U ^ seed) | 0x01010101U;
  }
}

__global__ void fill_float_kernel(float* data, size_t n, uint32_t seed, float scale) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = hash32(static_cast<uint32_t>(i) * 0x9e3779b9U ^ seed);
    data[i] = scale * (static_cast<float>(h >> 8) * (2.0f / 16777216.0f) - 1.0f);
  }
}

__global__ void touch_kernel(uint4* data, size_t n, uint32_t value) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    data[i] = make_uint4(value, value + 1, value + 2, static_cast<uint32_t>(i));
  }
}
}  // namespace

void fill_random_bytes(DeviceBuffer& buffer, uint32_t seed) {
  fill_words_kernel<<<1024, 256>>>(buffer.as<uint32_t>(), buffer.bytes() / 4, seed);
  PROBE_CHECK_LAUNCH();
}

void fill_random_float(float* data, size_t n, uint32_t seed, float scale) {
  fill_float_kernel<<<1024, 256>>>(data, n, seed, scale);
  PROBE_CHECK_LAUNCH();
}

L2Flusher::L2Flusher(size_t l2_bytes) : buffer_(2 * l2_bytes) {}

void L2Flusher::flush(cudaStream_t stream) {
  static uint32_t value = 1;
  touch_kernel<<<1024, 256, 0, stream>>>(buffer_.as<uint4>(), buffer_.bytes() / 16, value++);
  PROBE_CHECK_LAUNCH();
}

SampleStats time_runs(const std::function<void()>& run, const TimingPlan& plan) {
  for (int i = 0; i < plan.warmup; ++i) run();
  PROBE_CHECK(cudaDeviceSynchronize());
  std::vector<cudaEvent_t> start(plan.repeats), stop(plan.repeats);
  for (int i = 0; i < plan.repeats; ++i) {
    PROBE_CHECK(cudaEventCreate(&start[i]));
    PROBE_CHECK(cudaEventCreate(&stop[i]));
  }
  for (int i = 0; i < plan.repeats; ++i) {
    if (plan.flusher) plan.flusher->flush();
    PROBE_CHECK(cudaEventRecord(start[i]));
    run();
    PROBE_CHECK(cudaEventRecord(stop[i]));
  }
  PROBE_CHECK(cudaDeviceSynchronize());
  PROBE_CHECK_LAUNCH();
  std::vector<double> seconds(plan.repeats);
  for (int i = 0; i < plan.repeats; ++i) {
    float ms = 0.0f;
    PROBE_CHECK(cudaEventElapsedTime(&ms, start[i], stop[i]));
    seconds[i] = ms * 1e-3;
    cudaEventDestroy(start[i]);
    cudaEventDestroy(stop[i]);
  }
  return summarize(seconds);
}

double host_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

}  // namespace inferlab::probe
