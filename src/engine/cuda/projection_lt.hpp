#pragma once
// The Projector's cuBLASLt GEMMs (tensor-core path), one cached algorithm per shape: D = op(A) · B
// in cuBLASLt's column-major "TN" form, where A is the weight matrix (row-major [m][k] =
// column-major k × m, transposed), B the input rows (row-major [n][k] = column-major k × n) and D
// row-major [n][ldd] (column-major m × n, leading dimension ldd).
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

namespace inferlab::engine::cuda {

enum class LtKind {
  bf16,       // bf16 A, B; D bf16 or fp32
  fp8_outer,  // E4M3 A, B with outer-vector scales (a_scales [m], b_scales [n]); D bf16/fp32
  fp8_plain,  // E4M3 A, B, unit scales; D fp32
  int8,       // int8 A, B; D int32
};

struct LtCall {
  LtKind kind = LtKind::bf16;
  int64_t m = 0, n = 0, k = 0, ldd = 0;
  const void* a = nullptr;
  const void* b = nullptr;
  void* d = nullptr;
  bool d_fp32 = false;              // bf16 / fp8 kinds
  const void* bias = nullptr;       // bf16 [m]: cuBLASLt's bias epilogue (bf16 D only)
  const float* a_scales = nullptr;  // fp8_outer
  const float* b_scales = nullptr;  // fp8_outer
};

class LtRunner {
 public:
  LtRunner(void* workspace, size_t workspace_bytes);
  ~LtRunner();
  LtRunner(const LtRunner&) = delete;
  LtRunner& operator=(const LtRunner&) = delete;

  // Runs the GEMM; false when cuBLASLt has no algorithm for it or refuses it at launch (the
  // caller then takes another route); std::runtime_error for other failures. Algorithms are
  // chosen for the pointers' actual alignment (cuBLASLt's heuristic otherwise assumes 256
  // bytes), one per shape and alignment.
  bool run(const LtCall& call, cudaStream_t stream);

 private:
  struct Plan;
  // kind, m, n, k, ldd, bias, fp32 D, the pointers' common alignment in bytes
  using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, bool, bool, int>;
  Plan* plan_for(const LtCall& call, int alignment);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace inferlab::engine::cuda
