// The int8 GEMV family (gemv_kernel.cuh), in its own translation unit to keep builds parallel.
#include "engine/cuda/gemv_kernel.cuh"

namespace inferlab::engine::cuda {

void launch_gemv_int8(const GemvParams& p, const GemvPlan& plan, cudaStream_t stream) {
  gemv::launch_family<gemv::KindInt8, 4>(p, plan, stream);
}

}  // namespace inferlab::engine::cuda
