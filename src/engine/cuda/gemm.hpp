#pragma once
// The engine's projections: y = x · Wᵀ (+ bias), nn.Linear's layout, bf16 operands, fp32
// accumulation, bf16 or fp32 output. One or two rows (decode) go to the engine's own GEMV
// kernel (gemv.hpp) unless it is switched off; the rest to cuBLASLt, one algorithm per shape,
// chosen by its heuristic once and kept.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "engine/cuda/cuda_check.hpp"

namespace inferlab::engine::cuda {

class LtGemm {
 public:
  explicit LtGemm(size_t workspace_bytes = size_t{32} << 20);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // Whether small row counts go to the GEMV kernel (default: on unless INFERLAB_ENGINE_GEMV=0),
  // and up to how many rows (the kernel takes 16; measured on an H100 it beats cuBLASLt at 1
  // and 2 rows and loses from 5: a decode step of Llama 3 8B at batch 5-8 took 12.5 ms through
  // it against 8 ms at batch 17-20 through cuBLASLt, docs/MEASUREMENTS.md §19).
  static constexpr int64_t kDefaultGemvRows = 2;
  void set_gemv(bool on) { gemv_max_rows_ = on ? kDefaultGemvRows : 0; }
  void set_gemv_max_rows(int64_t rows) { gemv_max_rows_ = rows; }
  bool gemv() const { return gemv_max_rows_ > 0; }

  // y[rows, out] = x[rows, in] · w[out, in]ᵀ (+ bias[out]); y is bf16, or fp32 when y_fp32.
  // Row-major throughout. Launches on `stream`.
  void linear(const __nv_bfloat16* x, int64_t rows, const __nv_bfloat16* w,
              const __nv_bfloat16* bias, int64_t in_features, int64_t out_features, void* y,
              bool y_fp32, cudaStream_t stream);

 private:
  struct Plan;
  using Key = std::tuple<int64_t, int64_t, int64_t, bool, bool>;  // rows, in, out, bias, fp32
  Plan& plan_for(const Key& key);

  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer<unsigned char> workspace_;
  std::map<Key, std::unique_ptr<Plan>> plans_;
  int64_t gemv_max_rows_ = kDefaultGemvRows;
};

}  // namespace inferlab::engine::cuda
