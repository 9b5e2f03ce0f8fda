#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

#include "probe/cuda/compute_simt.cuh"
#include "probe/cuda/cuda_util.cuh"

namespace inferlab::probe {

namespace {

constexpr int kChains = 8;  // independent FMA chains per thread hide the FMA latency

template <typename T>
struct FmaOps;
template <>
struct FmaOps<double> {
  static __device__ double fma(double a, double b, double c) { return ::fma(a, b, c); }
  static __device__ double from(float x) { return x; }
  static __device__ float to_float(double x) { return static_cast<float>(x); }
  static constexpr int kFlopsPerFma = 2;
};
template <>
struct FmaOps<float> {
  static __device__ float fma(float a, float b, float c) { return fmaf(a, b, c); }
  static __device__ float from(float x) { return x; }
  static __device__ float to_float(float x) { return x; }
  static constexpr int kFlopsPerFma = 2;
};
template <>
struct FmaOps<__half2> {
  static __device__ __half2 fma(__half2 a, __half2 b, __half2 c) { return __hfma2(a, b, c); }
  static __device__ __half2 from(float x) { return __float2half2_rn(x); }
  static __device__ float to_float(__half2 x) { return __low2float(x) + __high2float(x); }
  static constexpr int kFlopsPerFma = 4;
};
template <>
struct FmaOps<__nv_bfloat162> {
  static __device__ __nv_bfloat162 fma(__nv_bfloat162 a, __nv_bfloat162 b, __nv_bfloat162 c) {
    return __hfma2(a, b, c);
  }
  static __device__ __nv_bfloat162 from(float x) { return __float2bfloat162_rn(x); }
  static __device__ float to_float(__nv_bfloat162 x) { return __low2float(x) + __high2float(x); }
  static constexpr int kFlopsPerFma = 4;
};

// x <- x * b + c, a contraction toward c / (1 - b): values stay bounded and non-zero.
template <typename T>
__global__ void fma_chains(float* out, float b_f, float c_f, int iterations) {
  using Ops = FmaOps<T>;
  const T b = Ops::from(b_f), c = Ops::from(c_f);
  T x[kChains];
#pragma unroll
  for (int j = 0; j < kChains; ++j) x[j] = Ops::from(0.01f * (j + 1));
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int j = 0; j < kChains; ++j) x[j] = Ops::fma(x[j], b, c);
  }
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kChains; ++j) sum += Ops::to_float(x[j]);
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

template <typename T>
nlohmann::json run_chain(const char* name, int sm_count, bool quick, double host_expected) {
  const int threads = 256, blocks = sm_count * 8, iterations = quick ? 4096 : 16384;
  DeviceBuffer out(sizeof(float) * blocks * threads);
  const float b = 0.5f, c = 0.25f;
  auto stats =
      time_runs([&] { fma_chains<T><<<blocks, threads>>>(out.as<float>(), b, c, iterations); },
                {2, quick ? 5 : 15, nullptr});
  float first = 0.0f;
  PROBE_CHECK(cudaMemcpy(&first, out.as<float>(), sizeof(float), cudaMemcpyDeviceToHost));
  // Every chain converges to c / (1 - b) = 0.5; packed types sum two lanes.
  double tolerance = 0.02 * std::fabs(host_expected);
  if (!(std::fabs(first - host_expected) <= tolerance)) {
    throw std::runtime_error(std::string("SIMT ") + name + " chain result " +
                             std::to_string(first) + " != expected " +
                             std::to_string(host_expected));
  }
  double flops =
      static_cast<double>(blocks) * threads * iterations * kChains * FmaOps<T>::kFlopsPerFma;
  SampleStats rate = rate_stats(stats, flops);
  return {{"flops_per_s", rate.median},
          {"time", stats_to_json(stats)},
          {"rate_min", rate.min},
          {"rate_max", rate.max},
          {"flops_per_run", flops},
          {"method", "FMA chains, 8 per thread, 256 threads x 8 blocks per SM"}};
}

__device__ __forceinline__ uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(long long cycles, unsigned long long* result) {
  uint64_t t0 = global_timer_ns();
  long long c0 = clock64();
  while (clock64() - c0 < cycles) {
  }
  long long c1 = clock64();
  uint64_t t1 = global_timer_ns();
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    result[0] = static_cast<unsigned long long>(c1 - c0);
    result[1] = t1 - t0;
  }
}

}  // namespace

nlohmann::json measure_simt_peaks(int sm_count, bool quick) {
  nlohmann::json out;
  out["fp64_simt"] = run_chain<double>("fp64", sm_count, quick, 8 * 0.5);
  out["fp32_simt"] = run_chain<float>("fp32", sm_count, quick, 8 * 0.5);
  out["fp16_simt"] = run_chain<__half2>("fp16x2", sm_count, quick, 16 * 0.5);
  out["bf16_simt"] = run_chain<__nv_bfloat162>("bf16x2", sm_count, quick, 16 * 0.5);
  return out;
}

double measure_sm_clock_hz() {
  DeviceBuffer result(2 * sizeof(unsigned long long));
  const long long cycles = 200'000'000;  // ~0.1 s at 2 GHz
  spin_kernel<<<1, 32>>>(cycles, result.as<unsigned long long>());
  PROBE_CHECK_LAUNCH();
  unsigned long long host[2];
  PROBE_CHECK(
      cudaMemcpy(host, result.as<unsigned long long>(), sizeof(host), cudaMemcpyDeviceToHost));
  return static_cast<double>(host[0]) / (static_cast<double>(host[1]) * 1e-9);
}

}  // namespace inferlab::probe
