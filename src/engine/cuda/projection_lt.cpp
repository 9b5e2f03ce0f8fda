#include "engine/cuda/projection_lt.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

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

// The timing: a warm-up launch of every candidate, then kTimedRounds rounds launching each once
// more, in an order rotated every round, all queued back to back with an event between
// consecutive launches and one synchronization at the end; a candidate's time is its median over
// the rounds. Queued work ahead of each timed launch keeps the host's launch latency out of the
// times (an idle GPU would count it against whichever candidate comes first), and the rotation
// spreads clock ramps and other drift over all the candidates.
constexpr int kTimedRounds = 3;
constexpr int kCandidates = 8;  // heuristic results kept and timed

}  // namespace

struct LtRunner::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};  // the one launched: candidates[0] until settled
  // The heuristic's results (at most kCandidates, best first, wavesCount and workspace as given).
  std::vector<cublasLtMatmulHeuristicResult_t> candidates;
  bool usable = false;
  bool settled = false;  // algo is final (timed, the bucket's winner, or tuning off)
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
  for (cudaEvent_t event : events_) {
    cudaEventDestroy(event);
  }
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
  cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
  int found_count = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(handle_, plan->desc, plan->a, plan->b, plan->d, plan->d,
                                     preference, kCandidates, results, &found_count);
  cublasLtMatmulPreferenceDestroy(preference);
  plan->usable = status == CUBLAS_STATUS_SUCCESS && found_count > 0;
  if (plan->usable) {
    for (int i = 0; i < found_count; ++i) {
      if (results[i].state == CUBLAS_STATUS_SUCCESS) plan->candidates.push_back(results[i]);
    }
    plan->usable = !plan->candidates.empty();
  }
  if (plan->usable) plan->algo = plan->candidates.front().algo;
  // At most kMaxUntunedRows rows (decode batches, the GEMV's neighbours) keep the heuristic's
  // choice: on the H200 the timed winner for 16 rows made graphed decodes 13-15% slower.
  plan->settled = !tune_ || call.n <= kMaxUntunedRows;
  return plans_.emplace(key, std::move(plan)).first->second.get();
}

int64_t LtRunner::rows_bucket(int64_t n) {
  if (n <= 256) return (n + 15) / 16;              // 1..16
  if (n <= 2048) return 16 + (n - 256 + 63) / 64;  // 17..44
  return 44 + (n - 2048 + 255) / 256;              // 45..
}

void LtRunner::settle(Plan* plan, const LtCall& call, int alignment, cudaStream_t stream) {
  // Never tune into a graph under capture (nor record anything): the heuristic's first choice.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess) {
    cudaGetLastError();  // not sticky; the stream's state is unknown, so no tuning
    return;
  }
  if (capture != cudaStreamCaptureStatusNone) return;
  plan->settled = true;
  const Key bucket{static_cast<int>(call.kind),
                   call.m,
                   rows_bucket(call.n),
                   call.k,
                   call.ldd,
                   call.bias != nullptr,
                   call.d_fp32,
                   alignment};
  if (auto winner = winners_.find(bucket); winner != winners_.end()) {
    // Another n of the bucket was timed: its winner if cuBLASLt takes it for this shape.
    cublasLtMatmulHeuristicResult_t check{};
    if (cublasLtMatmulAlgoCheck(handle_, plan->desc, plan->a, plan->b, plan->d, plan->d,
                                &winner->second, &check) == CUBLAS_STATUS_SUCCESS &&
        check.workspaceSize <= workspace_bytes_) {
      plan->algo = winner->second;
    }
    return;
  }
  if (plan->candidates.size() < 2) return;  // nothing to choose between
  const int count = static_cast<int>(plan->candidates.size());
  const int per_round = count + 1;
  while (static_cast<int>(events_.size()) < kTimedRounds * per_round) {
    cudaEvent_t event = nullptr;
    if (cudaEventCreate(&event) != cudaSuccess) {
      throw std::runtime_error("cuBLASLt: cudaEventCreate for the algorithm timing failed");
    }
    events_.push_back(event);
  }
  std::vector<bool> alive(count);
  for (int c = 0; c < count; ++c) {  // the warm-up; a candidate refused here is skipped
    alive[c] = launch(*plan, plan->candidates[c].algo, call, stream) == CUBLAS_STATUS_SUCCESS;
  }
  for (int round = 0; round < kTimedRounds; ++round) {
    cudaEvent_t* events = &events_[round * per_round];
    if (cudaEventRecord(events[0], stream) != cudaSuccess) return;
    for (int i = 0; i < count; ++i) {
      const int c = (i + round) % count;
      if (alive[c]) {
        alive[c] = launch(*plan, plan->candidates[c].algo, call, stream) == CUBLAS_STATUS_SUCCESS;
      }
      if (cudaEventRecord(events[i + 1], stream) != cudaSuccess) return;
    }
  }
  if (cudaEventSynchronize(events_[kTimedRounds * per_round - 1]) != cudaSuccess) return;
  std::vector<std::vector<float>> times(count);
  for (int round = 0; round < kTimedRounds; ++round) {
    for (int i = 0; i < count; ++i) {
      const int c = (i + round) % count;
      const cudaEvent_t* events = &events_[round * per_round];
      float ms = 0.0f;
      if (alive[c]) alive[c] = cudaEventElapsedTime(&ms, events[i], events[i + 1]) == cudaSuccess;
      times[c].push_back(ms);
    }
  }
  int best = -1;
  float best_ms = 0.0f;
  for (int c = 0; c < count; ++c) {
    if (!alive[c]) continue;
    std::sort(times[c].begin(), times[c].end());
    const float median = times[c][times[c].size() / 2];
    if (best < 0 || median < best_ms) best = c, best_ms = median;
  }
  // None launched: keep the first (run()'s launch then refuses or reports it), record nothing.
  if (best < 0) return;
  plan->algo = plan->candidates[best].algo;
  winners_.emplace(bucket, plan->algo);
}

cublasStatus_t LtRunner::launch(const Plan& plan, const cublasLtMatmulAlgo_t& algo,
                                const LtCall& call, cudaStream_t stream) {
  const float alpha = 1.0f, beta = 0.0f;
  const int32_t alpha_int = 1, beta_int = 0;
  const bool integer = call.kind == LtKind::int8;
  return cublasLtMatmul(handle_, plan.desc, integer ? static_cast<const void*>(&alpha_int) : &alpha,
                        call.a, plan.a, call.b, plan.b,
                        integer ? static_cast<const void*>(&beta_int) : &beta, call.d, plan.d,
                        call.d, plan.d, &algo, workspace_, workspace_bytes_, stream);
}

bool LtRunner::run(const LtCall& call, cudaStream_t stream) {
  const int alignment = common_alignment(call);
  Plan* plan = plan_for(call, alignment);
  if (!plan->usable) return false;
  if (call.bias != nullptr) {
    set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, call.bias, "bias pointer");
  }
  if (call.kind == LtKind::fp8_outer) {
    set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, call.a_scales, "A scales");
    set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, call.b_scales, "B scales");
  }
  if (!plan->settled) settle(plan, call, alignment, stream);
  const cublasStatus_t status = launch(*plan, plan->algo, call, stream);
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
