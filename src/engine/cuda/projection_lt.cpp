#include "engine/cuda/projection_lt.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace inferlab::engine::cuda {

namespace {

void check_lt(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("cuBLASLt: ") + what + " failed (status " +
                             std::to_string(static_cast<int>(status)) + ")");
  }
}

template <class T>
void set_attribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute,
                   const T& value, const char* what) {
  check_lt(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value), what);
}

// The largest power of two (at most 256) dividing every pointer of the call.
int common_alignment(const LtCall& call) {
  uintptr_t bits = reinterpret_cast<uintptr_t>(call.a) | reinterpret_cast<uintptr_t>(call.b) |
                   reinterpret_cast<uintptr_t>(call.d) | uintptr_t{256};
  if (call.bias != nullptr) bits |= reinterpret_cast<uintptr_t>(call.bias);
  return static_cast<int>(bits & (~bits + 1));
}

const char* kind_name(LtKind kind) {
  switch (kind) {
    case LtKind::bf16:
      return "bf16";
    case LtKind::fp8_outer:
      return "fp8 (outer-vector scales)";
    case LtKind::fp8_plain:
      return "fp8";
    case LtKind::int8:
      return "int8";
  }
  return "?";
}

}  // namespace

struct LtRunner::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool usable = false;
  ~Plan() {
    if (desc) cublasLtMatmulDescDestroy(desc);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (d) cublasLtMatrixLayoutDestroy(d);
  }
};

LtRunner::LtRunner(void* workspace, size_t workspace_bytes)
    : workspace_(workspace), workspace_bytes_(workspace_bytes) {
  check_lt(cublasLtCreate(&handle_), "cublasLtCreate");
}

LtRunner::~LtRunner() {
  plans_.clear();
  if (handle_) cublasLtDestroy(handle_);
}

LtRunner::Plan* LtRunner::plan_for(const LtCall& call, int alignment) {
  const Key key{static_cast<int>(call.kind), call.m,      call.n,   call.k, call.ldd,
                call.bias != nullptr,        call.d_fp32, alignment};
  auto found = plans_.find(key);
  if (found != plans_.end()) return found->second.get();
  auto plan = std::make_unique<Plan>();
  const bool integer = call.kind == LtKind::int8;
  check_lt(cublasLtMatmulDescCreate(&plan->desc, integer ? CUBLAS_COMPUTE_32I : CUBLAS_COMPUTE_32F,
                                    integer ? CUDA_R_32I : CUDA_R_32F),
           "desc");
  set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T, "transa");
  set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N, "transb");
  if (call.kind == LtKind::fp8_outer) {
    // Each D(i, j) times a_scales[i] (a weight row, i < m) and b_scales[j] (an input row).
    const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode, "A scale mode");
    set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode, "B scale mode");
  }
  if (call.bias != nullptr) {
    set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS, "epilogue");
    const int32_t bias_type = CUDA_R_16BF;
    set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type, "bias type");
  }
  cudaDataType_t ab_type = CUDA_R_16BF, d_type = call.d_fp32 ? CUDA_R_32F : CUDA_R_16BF;
  if (call.kind == LtKind::fp8_outer || call.kind == LtKind::fp8_plain) ab_type = CUDA_R_8F_E4M3;
  if (call.kind == LtKind::fp8_plain) d_type = CUDA_R_32F;
  if (integer) ab_type = CUDA_R_8I, d_type = CUDA_R_32I;
  check_lt(cublasLtMatrixLayoutCreate(&plan->a, ab_type, call.k, call.m, call.k), "layout A");
  check_lt(cublasLtMatrixLayoutCreate(&plan->b, ab_type, call.k, call.n, call.k), "layout B");
  check_lt(cublasLtMatrixLayoutCreate(&plan->d, d_type, call.m, call.n, call.ldd), "layout D");

  cublasLtMatmulPreference_t preference = nullptr;
  check_lt(cublasLtMatmulPreferenceCreate(&preference), "preference");
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &workspace_bytes_, sizeof workspace_bytes_);
  const auto align = static_cast<uint32_t>(alignment);
  for (auto attribute :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    cublasLtMatmulPreferenceSetAttribute(preference, attribute, &align, sizeof align);
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found_count = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(handle_, plan->desc, plan->a, plan->b, plan->d, plan->d,
                                     preference, 1, &result, &found_count);
  cublasLtMatmulPreferenceDestroy(preference);
  plan->usable = status == CUBLAS_STATUS_SUCCESS && found_count > 0;
  if (plan->usable) plan->algo = result.algo;
  return plans_.emplace(key, std::move(plan)).first->second.get();
}

bool LtRunner::run(const LtCall& call, cudaStream_t stream) {
  Plan* plan = plan_for(call, common_alignment(call));
  if (!plan->usable) return false;
  if (call.bias != nullptr) {
    set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, call.bias, "bias pointer");
  }
  if (call.kind == LtKind::fp8_outer) {
    set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, call.a_scales, "A scales");
    set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, call.b_scales, "B scales");
  }
  const float alpha = 1.0f, beta = 0.0f;
  const int32_t alpha_int = 1, beta_int = 0;
  const bool integer = call.kind == LtKind::int8;
  const cublasStatus_t status = cublasLtMatmul(
      handle_, plan->desc, integer ? static_cast<const void*>(&alpha_int) : &alpha, call.a, plan->a,
      call.b, plan->b, integer ? static_cast<const void*>(&beta_int) : &beta, call.d, plan->d,
      call.d, plan->d, &plan->algo, workspace_, workspace_bytes_, stream);
  if (status == CUBLAS_STATUS_SUCCESS) return true;
  // Outer-vector scaling may be refused only at launch (nothing was launched then).
  if (call.kind == LtKind::fp8_outer &&
      (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE)) {
    plan->usable = false;
    return false;
  }
  throw std::runtime_error(std::string("cuBLASLt: the ") + kind_name(call.kind) + " GEMM " +
                           std::to_string(call.n) + "x" + std::to_string(call.k) + "x" +
                           std::to_string(call.m) + " failed (status " +
                           std::to_string(static_cast<int>(status)) + ")");
}

}  // namespace inferlab::engine::cuda
