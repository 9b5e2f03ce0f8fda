#include "engine/cuda/gemm.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "engine/cuda/gemv.hpp"

namespace inferlab::engine::cuda {

namespace {

void check_lt(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("cuBLASLt: ") + what + " failed (status " +
                             std::to_string(static_cast<int>(status)) + ")");
  }
}

}  // namespace

// cuBLASLt is column-major. A row-major [out, in] weight is a column-major in × out matrix, so
// C (column-major out × rows, i.e. row-major [rows, out]) = Wᵀ-op(A = W) · (B = x as in × rows):
// the "TN" GEMM with m = out, n = rows, k = in. A per-row bias of C is per output feature.
struct LtGemm::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (desc) cublasLtMatmulDescDestroy(desc);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
  }
};

LtGemm::LtGemm(size_t workspace_bytes) : workspace_(workspace_bytes) {
  check_lt(cublasLtCreate(&handle_), "cublasLtCreate");
  // A/B on a GPU without rebuilding: INFERLAB_ENGINE_GEMV=0 turns the kernel off,
  // INFERLAB_ENGINE_GEMV_ROWS=N (0-16) sets the rows it takes.
  const char* env = std::getenv("INFERLAB_ENGINE_GEMV");
  if (env != nullptr && std::string(env) == "0") gemv_max_rows_ = 0;
  const char* rows = std::getenv("INFERLAB_ENGINE_GEMV_ROWS");
  if (rows != nullptr && gemv_max_rows_ > 0) {
    gemv_max_rows_ = std::clamp<int64_t>(std::atoll(rows), 0, kGemvMaxRows);
  }
}

LtGemm::~LtGemm() {
  plans_.clear();
  if (handle_) cublasLtDestroy(handle_);
}

LtGemm::Plan& LtGemm::plan_for(const Key& key) {
  auto found = plans_.find(key);
  if (found != plans_.end()) return *found->second;
  const auto [rows, in, out, bias, fp32] = key;
  auto plan = std::make_unique<Plan>();
  check_lt(cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
  const cublasOperation_t transpose = CUBLAS_OP_T, none = CUBLAS_OP_N;
  check_lt(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                          sizeof transpose),
           "transa");
  check_lt(
      cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof none),
      "transb");
  if (bias) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    check_lt(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                            sizeof epilogue),
             "epilogue");
    const cudaDataType_t bias_type = CUDA_R_16BF;
    check_lt(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                            &bias_type, sizeof bias_type),
             "bias type");
  }
  const cudaDataType_t out_type = fp32 ? CUDA_R_32F : CUDA_R_16BF;
  check_lt(cublasLtMatrixLayoutCreate(&plan->a, CUDA_R_16BF, in, out, in), "layout A");
  check_lt(cublasLtMatrixLayoutCreate(&plan->b, CUDA_R_16BF, in, rows, in), "layout B");
  check_lt(cublasLtMatrixLayoutCreate(&plan->c, out_type, out, rows, out), "layout C");

  cublasLtMatmulPreference_t preference = nullptr;
  check_lt(cublasLtMatmulPreferenceCreate(&preference), "preference");
  const size_t workspace_bytes = workspace_.bytes();
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &workspace_bytes, sizeof workspace_bytes);
  cublasLtMatmulHeuristicResult_t result{};
  int found_count = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(handle_, plan->desc, plan->a, plan->b, plan->c, plan->c,
                                     preference, 1, &result, &found_count);
  cublasLtMatmulPreferenceDestroy(preference);
  if (status != CUBLAS_STATUS_SUCCESS || found_count == 0) {
    throw std::runtime_error("cuBLASLt has no algorithm for the GEMM " + std::to_string(rows) +
                             "x" + std::to_string(in) + "x" + std::to_string(out));
  }
  plan->algo = result.algo;
  return *plans_.emplace(key, std::move(plan)).first->second;
}

void LtGemm::linear(const __nv_bfloat16* x, int64_t rows, const __nv_bfloat16* w,
                    const __nv_bfloat16* bias, int64_t in_features, int64_t out_features, void* y,
                    bool y_fp32, cudaStream_t stream) {
  if (rows == 0) return;
  if (rows <= gemv_max_rows_ && gemv_supported(x, rows, w, in_features)) {
    cuda::gemv(x, rows, w, bias, in_features, out_features, y, y_fp32, stream);
    return;
  }
  Plan& plan = plan_for({rows, in_features, out_features, bias != nullptr, y_fp32});
  if (bias != nullptr) {
    check_lt(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                            sizeof bias),
             "bias pointer");
  }
  const float alpha = 1.0f, beta = 0.0f;
  check_lt(cublasLtMatmul(handle_, plan.desc, &alpha, w, plan.a, x, plan.b, &beta, y, plan.c, y,
                          plan.c, &plan.algo, workspace_.data(), workspace_.bytes(), stream),
           "cublasLtMatmul");
}

}  // namespace inferlab::engine::cuda
