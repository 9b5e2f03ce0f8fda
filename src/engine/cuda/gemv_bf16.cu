// The bf16 GEMV family (gemv_kernel.cuh), in its own translation unit to keep builds parallel.
#include "engine/cuda/gemv_kernel.cuh"

namespace inferlab::engine::cuda {

void launch_gemv_bf16(const GemvParams& p, const GemvPlan& plan, cudaStream_t stream) {
  gemv::launch_family<gemv::KindBf16, 4>(p, plan, stream);
}

}  // namespace inferlab::engine::cuda
