// The bf16 GEMV family (gemv_kernel.cuh): bf16 weights straight into m16n8k16 fragments.
//
// Llama 3 8B at one row (2 bytes a weight; FLOPs 2·in·out): qkv 4096→6144 50.3 MB, 50 MFLOP,
// floor 10.5 µs at 4.8 TB/s; o 4096→4096 33.6 MB, 7.0 µs; gate/up 4096→28672 234.9 MB,
// 48.9 µs; down 14336→4096 117.4 MB, 24.5 µs; LM head 4096→128256 1050.7 MB, 219 µs. A layer
// 436 MB, 90.9 µs; a decode step (32 layers + LM head) 3.13 ms. At 32 rows the FLOPs grow 32x
// (1.6 GFLOP for qkv: ~3 µs at the ~500 TFLOP/s mma.sync reaches, against the 10.5 µs of its
// bytes): still memory-bound, and the weights need no conversion at all.
#include "engine/cuda/gemv_kernel.cuh"

namespace inferlab::engine::cuda {

void launch_gemv_bf16(const GemvParams& p, const GemvPlan& plan, cudaStream_t stream) {
  gemv::launch_family<gemv::KindBf16, 4>(p, plan, stream);
}

}  // namespace inferlab::engine::cuda
