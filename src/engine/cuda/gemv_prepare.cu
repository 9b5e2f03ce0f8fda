// The prepare kernel: input rows normalised (RMSNorm) and/or quantized once, with the GEMV
// prologue's own functions (gemv_rows.cuh), so a GEMV staged from its output computes the same
// bits as one that does the work itself. Also the tensor-core path's per-row quantization.
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/gemv_device.cuh"
#include "engine/cuda/gemv_launch.hpp"
#include "engine/cuda/gemv_rows.cuh"

namespace inferlab::engine::cuda {

namespace {

using gemv::pack_bf16;

// One block per row.
__global__ void __launch_bounds__(256)
    prepare_rows_kernel(const __nv_bfloat16* x, int in, const __nv_bfloat16* norm_weight, float eps,
                        RowQuant quant, __nv_bfloat16* normed_out, uint8_t* codes_out,
                        float* scales_out) {
  __shared__ float warp_sums[32];
  __shared__ float red[32];
  __shared__ float stats[2];  // inverse RMS, scale
  const int64_t base = static_cast<int64_t>(blockIdx.x) * in;
  const __nv_bfloat16* row = x + base;
  if (norm_weight != nullptr) gemv::rows_inv_rms(row, 1, in, eps, warp_sums, &stats[0]);
  const float inv_rms = norm_weight != nullptr ? stats[0] : 1.0f;
  if (quant == RowQuant::none) {
    for (int i = threadIdx.x; i < in / 8; i += blockDim.x) {
      float v[8];
      gemv::row_values8(row, norm_weight, inv_rms, 8 * i, v);
      *reinterpret_cast<uint4*>(normed_out + base + 8 * i) =
          make_uint4(pack_bf16(v[0], v[1]), pack_bf16(v[2], v[3]), pack_bf16(v[4], v[5]),
                     pack_bf16(v[6], v[7]));
    }
    return;
  }
  const float code_max = quant == RowQuant::int8 ? 127.0f : 448.0f;
  gemv::rows_scale(row, 1, in, norm_weight, &stats[0], code_max, red, &stats[1]);
  const float scale = stats[1];
  for (int i = threadIdx.x; i < in / 8; i += blockDim.x) {
    float v[8];
    gemv::row_values8(row, norm_weight, inv_rms, 8 * i, v);
    uint32_t w[2] = {0, 0};
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const uint32_t code = quant == RowQuant::int8
                                ? static_cast<uint32_t>(gemv::quantize_int8(v[j], scale)) & 0xffu
                                : gemv::quantize_e4m3(v[j], scale);
      w[j / 4] |= code << (8 * (j % 4));
    }
    *reinterpret_cast<uint2*>(codes_out + base + 8 * i) = make_uint2(w[0], w[1]);
  }
  if (threadIdx.x == 0) scales_out[blockIdx.x] = scale;
}

}  // namespace

void launch_prepare_rows(const __nv_bfloat16* x, int rows, int in, const __nv_bfloat16* norm_weight,
                         float eps, RowQuant quant, __nv_bfloat16* normed_out, uint8_t* codes_out,
                         float* scales_out, cudaStream_t stream) {
  if (rows == 0) return;
  prepare_rows_kernel<<<rows, 256, 0, stream>>>(x, in, norm_weight, eps, quant, normed_out,
                                                codes_out, scales_out);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void gemv_set_smem_limits() {
  // A launch of zero rows sets each family's limits and returns.
  GemvParams none;
  GemvPlan plan;
  launch_gemv_bf16(none, plan, nullptr);
  launch_gemv_int8(none, plan, nullptr);
  launch_gemv_fp8(none, plan, nullptr);
  launch_gemv_w8a8(none, plan, nullptr);
  for (int split : {1, 2, 4}) {
    plan.group_split = split;
    launch_gemv_int4(none, plan, nullptr);
  }
}

}  // namespace inferlab::engine::cuda
