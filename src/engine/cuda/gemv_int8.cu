// The int8 weight-only (W8A16) GEMV family (gemv_kernel.cuh): each int8 turned exactly into
// bf16 with 2 LOP + 4 PRMT + 2 HSUB2 per 4 weights, m16n8k16 bf16 mma, the channel scale on
// the finished sum.
//
// Llama 3 8B at one row (1 byte a weight + 4 a row of scales): qkv 25.2 MB, floor 5.2 µs at
// 4.8 TB/s; o 16.8 MB, 3.5 µs; gate/up 117.6 MB, 24.5 µs; down 58.7 MB, 12.2 µs; LM head
// 525.9 MB, 110 µs; a layer 218 MB, 45.5 µs; a decode step 1.56 ms. The conversion costs
// ~2 instructions a weight: at 4.8 TB/s / 132 SMs / 1.98 GHz = 18 weights per clock per SM,
// 37 of the SM's 128 issue slots a clock, independent of rows.
#include "engine/cuda/gemv_kernel.cuh"

namespace inferlab::engine::cuda {

void launch_gemv_int8(const GemvParams& p, const GemvPlan& plan, cudaStream_t stream) {
  gemv::launch_family<gemv::KindInt8, 4>(p, plan, stream);
}

}  // namespace inferlab::engine::cuda
