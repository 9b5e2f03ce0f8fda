#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "probe/cuda/gemm_lt.cuh"

namespace inferlab::probe {

#define LT_CHECK(call)                                                              \
  do {                                                                              \
    cublasStatus_t lt_status_ = (call);                                             \
    if (lt_status_ != CUBLAS_STATUS_SUCCESS) {                                      \
      throw std::runtime_error(std::string(#call) + " failed with cuBLAS status " + \
                               std::to_string(static_cast<int>(lt_status_)));       \
    }                                                                               \
  } while (0)

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;

struct TypeInfo {
  cudaDataType ab, d, scale;
  cublasComputeType_t compute;
  size_t ab_bytes, d_bytes;
};

TypeInfo type_info(GemmType t) {
  switch (t) {
    case GemmType::tf32:
      return {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4};
    case GemmType::fp16:
      return {CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 2, 2};
    case GemmType::bf16:
      return {CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, 2, 2};
    case GemmType::fp8_e4m3:
      return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, 1, 2};
    case GemmType::int8:
      return {CUDA_R_8I, CUDA_R_32I, CUDA_R_32I, CUBLAS_COMPUTE_32I, 1, 4};
  }
  throw std::logic_error("bad GemmType");
}

// Random operands of the element type, from uniform [-1, 1) floats (integers in [-8, 8)).
template <typename T>
__global__ void convert_kernel(const float* in, T* out, size_t n, float int_scale) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    if constexpr (std::is_same_v<T, int8_t>) {
      out[i] = static_cast<int8_t>(floorf(in[i] * int_scale));
    } else {
      out[i] = T(in[i]);
    }
  }
}

void fill_operand(DeviceBuffer& dst, GemmType t, size_t n, uint32_t seed) {
  DeviceBuffer tmp(n * sizeof(float));
  fill_random_float(tmp.as<float>(), n, seed);
  switch (t) {
    case GemmType::tf32:
      PROBE_CHECK(cudaMemcpy(dst.as<float>(), tmp.as<float>(), n * 4, cudaMemcpyDeviceToDevice));
      break;
    case GemmType::fp16:
      convert_kernel<<<1024, 256>>>(tmp.as<float>(), dst.as<__half>(), n, 0.f);
      break;
    case GemmType::bf16:
      convert_kernel<<<1024, 256>>>(tmp.as<float>(), dst.as<__nv_bfloat16>(), n, 0.f);
      break;
    case GemmType::fp8_e4m3:
      convert_kernel<<<1024, 256>>>(tmp.as<float>(), dst.as<__nv_fp8_e4m3>(), n, 0.f);
      break;
    case GemmType::int8:
      convert_kernel<<<1024, 256>>>(tmp.as<float>(), dst.as<int8_t>(), n, 8.f);
      break;
  }
  PROBE_CHECK_LAUNCH();
  PROBE_CHECK(cudaDeviceSynchronize());
}

double to_double(GemmType t, const uint8_t* base, size_t i) {
  switch (t) {
    case GemmType::tf32:
      return reinterpret_cast<const float*>(base)[i];
    case GemmType::fp16:
      return __half2float(reinterpret_cast<const __half*>(base)[i]);
    case GemmType::bf16:
      return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(base)[i]);
    case GemmType::fp8_e4m3:
      return static_cast<float>(reinterpret_cast<const __nv_fp8_e4m3*>(base)[i]);
    case GemmType::int8:
      return reinterpret_cast<const int8_t*>(base)[i];
  }
  return 0.0;
}

double output_to_double(GemmType t, const uint8_t* base, size_t i) {
  switch (t) {
    case GemmType::tf32:
      return reinterpret_cast<const float*>(base)[i];
    case GemmType::fp16:
      return __half2float(reinterpret_cast<const __half*>(base)[i]);
    case GemmType::bf16:
    case GemmType::fp8_e4m3:
      return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(base)[i]);
    case GemmType::int8:
      return reinterpret_cast<const int32_t*>(base)[i];
  }
  return 0.0;
}

}  // namespace

const char* gemm_type_name(GemmType type) {
  switch (type) {
    case GemmType::tf32:
      return "tf32";
    case GemmType::fp16:
      return "fp16";
    case GemmType::bf16:
      return "bf16";
    case GemmType::fp8_e4m3:
      return "fp8_e4m3";
    case GemmType::int8:
      return "int8";
  }
  return "?";
}

std::shared_ptr<std::remove_pointer_t<cublasLtHandle_t>> make_lt_handle() {
  cublasLtHandle_t handle;
  LT_CHECK(cublasLtCreate(&handle));
  return {handle, [](cublasLtHandle_t h) { cublasLtDestroy(h); }};
}

LtGemm::LtGemm(cublasLtHandle_t handle, GemmType type, int64_t m_out, int64_t n_tokens, int64_t k)
    : handle_(handle), type_(type), m_(m_out), n_(n_tokens), k_(k) {
  TypeInfo info = type_info(type);
  a_ = DeviceBuffer(info.ab_bytes * m_ * k_);
  b_ = DeviceBuffer(info.ab_bytes * n_ * k_);
  d_ = DeviceBuffer(info.d_bytes * m_ * n_);
  workspace_ = DeviceBuffer(kWorkspaceBytes);
  fill_operand(a_, type, m_ * k_, 0x1234u + static_cast<uint32_t>(m_));
  fill_operand(b_, type, n_ * k_, 0x9876u + static_cast<uint32_t>(n_));
  LT_CHECK(cublasLtMatmulDescCreate(&op_, info.compute, info.scale));
  cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  LT_CHECK(
      cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)));
  LT_CHECK(
      cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b)));
  // A is W: k x m column-major (W[m, k] row-major); B is x: k x n; D is m x n.
  LT_CHECK(cublasLtMatrixLayoutCreate(&a_layout_, info.ab, k_, m_, k_));
  LT_CHECK(cublasLtMatrixLayoutCreate(&b_layout_, info.ab, k_, n_, k_));
  LT_CHECK(cublasLtMatrixLayoutCreate(&d_layout_, info.d, m_, n_, m_));
  choose_algorithm(1);
}

LtGemm::~LtGemm() {
  if (d_layout_) cublasLtMatrixLayoutDestroy(d_layout_);
  if (b_layout_) cublasLtMatrixLayoutDestroy(b_layout_);
  if (a_layout_) cublasLtMatrixLayoutDestroy(a_layout_);
  if (op_) cublasLtMatmulDescDestroy(op_);
}

double LtGemm::min_bytes() const {
  TypeInfo info = type_info(type_);
  return static_cast<double>(info.ab_bytes) * (m_ * k_ + n_ * k_) +
         static_cast<double>(info.d_bytes) * m_ * n_;
}

void LtGemm::choose_algorithm(int candidates) {
  cublasLtMatmulPreference_t pref;
  LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  size_t ws = kWorkspaceBytes;
  LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                sizeof(ws)));
  std::vector<cublasLtMatmulHeuristicResult_t> results(std::max(1, candidates));
  int found = 0;
  LT_CHECK(cublasLtMatmulAlgoGetHeuristic(handle_, op_, a_layout_, b_layout_, d_layout_, d_layout_,
                                          pref, static_cast<int>(results.size()), results.data(),
                                          &found));
  cublasLtMatmulPreferenceDestroy(pref);
  if (found == 0) {
    throw std::runtime_error(std::string("cuBLASLt has no algorithm for ") + gemm_type_name(type_));
  }
  algo_ = results[0].algo;
  have_algo_ = true;
  if (found == 1) return;
  double best = 1e30;
  for (int i = 0; i < found; ++i) {
    algo_ = results[i].algo;
    double t = time_runs([&] { run(); }, {1, 5, nullptr}).median;
    if (t < best) {
      best = t;
      results[0] = results[i];
    }
  }
  algo_ = results[0].algo;
}

void LtGemm::run(cudaStream_t stream) {
  float alpha_f = 1.0f, beta_f = 0.0f;
  int32_t alpha_i = 1, beta_i = 0;
  const void* alpha = type_ == GemmType::int8 ? static_cast<const void*>(&alpha_i) : &alpha_f;
  const void* beta = type_ == GemmType::int8 ? static_cast<const void*>(&beta_i) : &beta_f;
  LT_CHECK(cublasLtMatmul(handle_, op_, alpha, a_.as<void>(), a_layout_, b_.as<void>(), b_layout_,
                          beta, d_.as<void>(), d_layout_, d_.as<void>(), d_layout_,
                          have_algo_ ? &algo_ : nullptr, workspace_.as<void>(), kWorkspaceBytes,
                          stream));
}

double LtGemm::check_against_host(int samples) const {
  TypeInfo info = type_info(type_);
  std::vector<uint8_t> a(info.ab_bytes * m_ * k_), b(info.ab_bytes * n_ * k_),
      d(info.d_bytes * m_ * n_);
  PROBE_CHECK(cudaDeviceSynchronize());
  PROBE_CHECK(cudaMemcpy(a.data(), a_.as<void>(), a.size(), cudaMemcpyDeviceToHost));
  PROBE_CHECK(cudaMemcpy(b.data(), b_.as<void>(), b.size(), cudaMemcpyDeviceToHost));
  PROBE_CHECK(cudaMemcpy(d.data(), d_.as<void>(), d.size(), cudaMemcpyDeviceToHost));
  std::mt19937_64 rng(42);
  double worst = 0.0;
  for (int s = 0; s < samples; ++s) {
    int64_t i = static_cast<int64_t>(rng() % m_), j = static_cast<int64_t>(rng() % n_);
    double ref = 0.0, scale = 0.0;
    for (int64_t kk = 0; kk < k_; ++kk) {
      double x = to_double(type_, a.data(), i * k_ + kk) * to_double(type_, b.data(), j * k_ + kk);
      ref += x;
      scale += std::fabs(x);
    }
    double got = output_to_double(type_, d.data(), j * m_ + i);
    worst = std::max(worst, std::fabs(got - ref) / std::max(scale, 1e-30));
  }
  return worst;
}

}  // namespace inferlab::probe
