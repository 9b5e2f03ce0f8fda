// The int4 GEMV family (gemv_kernel.cuh): GPTQ groups of a multiple of 128 (one group per
// 128-k chunk), of 64 or of 32 (2 or 4 groups per chunk, each with its own mma and scale; at
// most 16 or 8 rows). Nibble pairs (n, n+4) of a word become bf16 128 + q with one LOP3, the
// zero comes off with one HSUB2 (exact), the group scale multiplies each chunk's fp32 sum.
//
// Llama 3 8B at one row (0.5 byte a weight + 3 bytes per group of 128): qkv 13.2 MB, floor
// 2.7 µs at 4.8 TB/s; o 8.8 MB, 1.8 µs; gate/up 61.5 MB, 12.8 µs; down 30.7 MB, 6.4 µs; LM
// head 275 MB, 57 µs; a layer 114 MB, 23.8 µs; a decode step 0.82 ms. Per weight ~1.4
// instructions (3 SHF + 4 LOP3 + 4 HSUB2 per 8) at 37 weights per clock per SM: 52 of 128
// issue slots. The small projections (qkv, o) are near launch latency: their floor is 2-3 µs.
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
