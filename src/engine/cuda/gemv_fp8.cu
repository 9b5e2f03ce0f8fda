// The fp8 GEMV family (gemv_kernel.cuh): E4M3 weights and E4M3 input rows (quantized per row
// in the prologue), both converted exactly to fp16 (cvt.rn.f16x2.e4m3x2, one per two
// weights), m16n8k16 fp16 mma with fp32 accumulation (the fp8 mma's accumulator keeps fewer
// bits on Hopper), the row and channel scales on the finished sum.
//
// Llama 3 8B at one row (1 byte a weight + 4 a row of scales): qkv 25.2 MB, floor 5.2 µs at
// 4.8 TB/s; o 16.8 MB, 3.5 µs; gate/up 117.6 MB, 24.5 µs; down 58.7 MB, 12.2 µs; LM head
// 525.9 MB, 110 µs; a layer 218 MB, 45.5 µs; a decode step 1.56 ms.
#include "engine/cuda/gemv_kernel.cuh"

namespace inferlab::engine::cuda {

void launch_gemv_fp8(const GemvParams& p, const GemvPlan& plan, cudaStream_t stream) {
  gemv::launch_family<gemv::KindFp8, 4>(p, plan, stream);
}

}  // namespace inferlab::engine::cuda
