#pragma once
// GEMMs through cuBLASLt in the layout PyTorch's F.linear uses: D[n_out, tokens] (column-major)
// = W^T x with W stored [n_out, k] row-major and x [tokens, k] row-major ("TN").
#include <cublasLt.h>

#include <cstdint>
#include <memory>
#include <string>

#include "probe/cuda/cuda_util.cuh"

namespace inferlab::probe {

enum class GemmType { tf32, fp16, bf16, fp8_e4m3, int8 };
const char* gemm_type_name(GemmType type);

// One GEMM problem with its operands and the algorithm cuBLASLt's heuristic ranks first (or
// the fastest of the first `candidates` when asked).
class LtGemm {
 public:
  LtGemm(cublasLtHandle_t handle, GemmType type, int64_t m_out, int64_t n_tokens, int64_t k);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // Picks among the heuristic's first `candidates` algorithms by timing each.
  void choose_algorithm(int candidates);
  void run(cudaStream_t stream = nullptr);
  double flops() const { return 2.0 * m_ * n_ * k_; }
  double min_bytes() const;
  // Max relative error of sampled outputs against a float64 host dot product.
  double check_against_host(int samples) const;

 private:
  cublasLtHandle_t handle_;
  GemmType type_;
  int64_t m_, n_, k_;
  DeviceBuffer a_, b_, d_, workspace_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_layout_ = nullptr, b_layout_ = nullptr, d_layout_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  bool have_algo_ = false;
};

std::shared_ptr<std::remove_pointer_t<cublasLtHandle_t>> make_lt_handle();

}  // namespace inferlab::probe
