// The W8A8 GEMV family (gemv_kernel.cuh): int8 weights and int8 input rows (quantized per row
// in the prologue) straight into m16n8k32 integer mma, exact int32 sums (also across k
// slices), the row and channel scales on the finished sum. (dp4a would give the same bits at
// 4x the instructions.)
//
// Llama 3 8B at one row (1 byte a weight + 4 a row of scales): qkv 25.2 MB, floor 5.2 µs at
// 4.8 TB/s; o 16.8 MB, 3.5 µs; gate/up 117.6 MB, 24.5 µs; down 58.7 MB, 12.2 µs; LM head
// 525.9 MB, 110 µs; a layer 218 MB, 45.5 µs; a decode step 1.56 ms.
#include "engine/cuda/gemv_kernel.cuh"

namespace inferlab::engine::cuda {

void launch_gemv_w8a8(const GemvParams& p, const GemvPlan& plan, cudaStream_t stream) {
  gemv::launch_family<gemv::KindW8a8, 4>(p, plan, stream);
}

}  // namespace inferlab::engine::cuda
