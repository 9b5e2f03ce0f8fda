// The int4 GEMV family (gemv_kernel.cuh): groups of a multiple of 128 (one group per chunk),
// of 64 or of 32 (2 or 4 groups per chunk; at most 16 or 8 rows).
#include "engine/cuda/gemv_kernel.cuh"

namespace inferlab::engine::cuda {

void launch_gemv_int4(const GemvParams& p, const GemvPlan& plan, cudaStream_t stream) {
  switch (plan.group_split) {
    case 1:
      return gemv::launch_family<gemv::KindInt4<1>, 4>(p, plan, stream);
    case 2:
      return gemv::launch_family<gemv::KindInt4<2>, 2>(p, plan, stream);
    case 4:
      return gemv::launch_family<gemv::KindInt4<4>, 1>(p, plan, stream);
    default:
      throw std::invalid_argument("GEMV int4: unsupported group split");
  }
}

}  // namespace inferlab::engine::cuda
