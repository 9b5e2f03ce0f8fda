#pragma once
// The Projector's cuBLASLt GEMMs (tensor-core path), one cached algorithm per shape: D = op(A) · B
// in cuBLASLt's column-major "TN" form, where A is the weight matrix (row-major [m][k] =
// column-major k × m, transposed), B the input rows (row-major [n][k] = column-major k × n) and D
// row-major [n][ldd] (column-major m × n, leading dimension ldd).
//
// Why the algorithms can be timed (H200, 2026-11-26): the heuristic's first choice per exact
// shape is much slower for some row counts n. Llama 3 8B bf16 prefill GEMMs took 13.73 ms at
// n = 448 rows against 10.77 ms at n = 512. So, as TensorRT-LLM's GEMM profiler does, the runner
// times up to 8 of the heuristic's candidates once per bucket of n (see run()) and keeps the
// fastest, with INFERLAB_ENGINE_LT_TUNE=1; a CUDA backend then tunes every bucket when it is made
// (its GEMM warm-up), and GEMMs of at most 16 rows keep the heuristic's choice. Off by default:
// on the H200 (MEASUREMENTS §25) the timed choice fixed the 448-token prefill (−17 to −26%) but,
// tuned at start-up, made most other prefills 2-12% slower inside the model, and it did not move
// the server's latencies; timing candidates in isolation does not rank them as the model runs
// them. (Serving's mixed iterations of a row count that is a multiple of 8 looked ~30% slower per
// row too; that was a shape's first use, the plan's heuristic query and lazy kernel loading, which
// CudaBackendOptions::warm_gemm_rows moves to start-up: MEASUREMENTS §26.)
//
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

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
  // bytes), one per shape and alignment. With tuning on, the first call of a bucket of shapes
  // (rows_bucket) on a stream that is not capturing a graph times the heuristic's candidates on
  // the call's own buffers (beta = 0, so the repeated launches leave the same D) and keeps the
  // fastest for the bucket; later shapes of the bucket take that algorithm where cuBLASLt accepts
  // it for them. During capture the heuristic's first choice is used and nothing is recorded.
  bool run(const LtCall& call, cudaStream_t stream);

  // Off by default; ProjectionTuning::lt_tune (INFERLAB_ENGINE_LT_TUNE=1) turns it on in the
  // Projector's runner, and a CUDA backend then tunes every bucket of rows it can meet when it
  // is made (CudaBackend::warm_gemms). Affects the shapes met from then on.
  void set_tuning(bool on) { tune_ = on; }
  bool tuning() const { return tune_; }
  // How many buckets have a timed winner, and how many shapes have a plan.
  size_t tuned_buckets() const { return winners_.size(); }
  size_t plans() const { return plans_.size(); }

  // The bucket of n that shares one timed choice: 16 rows wide up to 256 rows, 64 up to 2048,
  // 256 above; so n = 1..2048 meets 44 buckets.
  static int64_t rows_bucket(int64_t n);
  // GEMMs of at most this many rows keep the heuristic's choice.
  static constexpr int64_t kMaxUntunedRows = 16;

 private:
  struct Plan;
  // kind, m, n, k, ldd, bias, fp32 D, the pointers' common alignment in bytes
  using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, bool, bool, int>;
  Plan* plan_for(const LtCall& call, int alignment);
  // Picks the plan's algorithm for good: the bucket's winner, or a timed choice (see run()).
  void settle(Plan* plan, const LtCall& call, int alignment, cudaStream_t stream);
  cublasStatus_t launch(const Plan& plan, const cublasLtMatmulAlgo_t& algo, const LtCall& call,
                        cudaStream_t stream);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  bool tune_ = false;
  std::vector<cudaEvent_t> events_;  // the timing's, made at the first tuning
  std::map<Key, std::unique_ptr<Plan>> plans_;
  // Key with n replaced by rows_bucket(n): the bucket's timed winner.
  std::map<Key, cublasLtMatmulAlgo_t> winners_;
};

}  // namespace inferlab::engine::cuda
