#pragma once
// RoPE's device arithmetic, shared by the RoPE + KV-write kernels (layer_kernels.cu) and the
// persistent decode kernel (decode_layers_hopper.cu), so that both rotate with the same bits:
// transformers casts cos and sin to bf16 and rounds each product and the sum to bf16. C++17.
#include <cuda_bf16.h>

namespace inferlab::engine::cuda::rope {

__device__ __forceinline__ float round_bf16(float x) {
  return __bfloat162float(__float2bfloat16(x));
}

// cos and sin of position · inv_freq[i], rounded to bf16 as transformers casts them.
__device__ __forceinline__ void angle(float position, float inv_freq, float& c, float& s) {
  float sin_value, cos_value;
  sincosf(position * inv_freq, &sin_value, &cos_value);
  c = round_bf16(cos_value);
  s = round_bf16(sin_value);
}

// The rotated pair (x1, x2) → (y1, y2), each product and sum rounded to bf16.
__device__ __forceinline__ void rotate(float x1, float x2, float c, float s, __nv_bfloat16& y1,
                                       __nv_bfloat16& y2) {
  y1 = __float2bfloat16(round_bf16(x1 * c) + round_bf16(-x2 * s));
  y2 = __float2bfloat16(round_bf16(x2 * c) + round_bf16(x1 * s));
}

}  // namespace inferlab::engine::cuda::rope
