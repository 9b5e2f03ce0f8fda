#include <cuda_fp8.h>

#include <stdexcept>
#include <string>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/layer_kernels.hpp"
#include "engine/cuda/rope_device.cuh"
#include "engine/quant/quantize.hpp"

namespace inferlab::engine::cuda {

namespace {

constexpr int kVector = 8;  // bf16 per 16-byte load

// Eight bf16 in one 16-byte word: the unit every kernel here loads and stores when it can.
struct alignas(16) Bf16x8 {
  bf16 v[kVector];
};

__device__ inline float round_bf16(float x) {
  return __bfloat162float(__float2bfloat16(x));
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the total.
__device__ float block_sum(float value) {
  __shared__ float warp_sums[32];
  for (int offset = 16; offset > 0; offset /= 2)
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) warp_sums[warp] = value;
  __syncthreads();
  const int warps = blockDim.x / 32;
  value = lane < warps ? warp_sums[lane] : 0.0f;
  for (int offset = 16; offset > 0; offset /= 2)
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  __syncthreads();  // warp_sums may be reused by the next call
  return value;
}

// Threads per row for row-wise kernels: one 16-byte vector each where the row allows, a
// multiple of 32, between 32 and 1024.
int row_threads(int hidden) {
  int vectors = (hidden + kVector - 1) / kVector;
  int threads = ((vectors + 31) / 32) * 32;
  return threads < 32 ? 32 : (threads > 1024 ? 1024 : threads);
}

bool vectorizable(int width) {
  return width % kVector == 0;
}

__global__ void embedding_kernel(const bf16* table, const int32_t* ids, int hidden, bf16* out) {
  const int t = blockIdx.x;
  const bf16* row = table + static_cast<int64_t>(ids[t]) * hidden;
  bf16* dst = out + static_cast<int64_t>(t) * hidden;
  if (hidden % kVector == 0) {
    for (int i = threadIdx.x; i < hidden / kVector; i += blockDim.x) {
      reinterpret_cast<Bf16x8*>(dst)[i] = reinterpret_cast<const Bf16x8*>(row)[i];
    }
  } else {
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) dst[i] = row[i];
  }
}

// One block per row. With `delta`, the row is first replaced by bf16(row + delta) (and written
// back); the norm then reads that rounded sum, as transformers' next RMSNorm does.
template <bool kAdd>
__global__ void rms_norm_kernel(bf16* x, const bf16* delta, const bf16* weight, int hidden,
                                float eps, bf16* out) {
  const int64_t base = static_cast<int64_t>(blockIdx.x) * hidden;
  bf16* row = x + base;
  float sum_squares = 0.0f;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    float value = __bfloat162float(row[i]);
    if (kAdd) {
      value = round_bf16(value + __bfloat162float(delta[base + i]));
      row[i] = __float2bfloat16(value);
    }
    sum_squares += value * value;
  }
  const float total = block_sum(sum_squares);
  const float scale = rsqrtf(total / static_cast<float>(hidden) + eps);
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    const float normed = round_bf16(__bfloat162float(row[i]) * scale);
    out[base + i] = __float2bfloat16(__bfloat162float(weight[i]) * normed);
  }
}

// The vectorized form: each thread owns one or more 16-byte vectors of the row.
template <bool kAdd>
__global__ void rms_norm_vec_kernel(bf16* x, const bf16* delta, const bf16* weight, int hidden,
                                    float eps, bf16* out) {
  const int64_t base = static_cast<int64_t>(blockIdx.x) * hidden;
  Bf16x8* row = reinterpret_cast<Bf16x8*>(x + base);
  const int vectors = hidden / kVector;
  float sum_squares = 0.0f;
  for (int i = threadIdx.x; i < vectors; i += blockDim.x) {
    Bf16x8 chunk = row[i];
    if (kAdd) {
      const Bf16x8 add = reinterpret_cast<const Bf16x8*>(delta + base)[i];
      for (int j = 0; j < kVector; ++j) {
        chunk.v[j] = __float2bfloat16(__bfloat162float(chunk.v[j]) + __bfloat162float(add.v[j]));
      }
      row[i] = chunk;
    }
    for (int j = 0; j < kVector; ++j) {
      const float value = __bfloat162float(chunk.v[j]);
      sum_squares += value * value;
    }
  }
  const float total = block_sum(sum_squares);
  const float scale = rsqrtf(total / static_cast<float>(hidden) + eps);
  for (int i = threadIdx.x; i < vectors; i += blockDim.x) {
    const Bf16x8 chunk = row[i];  // this thread's own write above: no barrier needed
    const Bf16x8 w = reinterpret_cast<const Bf16x8*>(weight)[i];
    Bf16x8 result;
    for (int j = 0; j < kVector; ++j) {
      const float normed = round_bf16(__bfloat162float(chunk.v[j]) * scale);
      result.v[j] = __float2bfloat16(__bfloat162float(w.v[j]) * normed);
    }
    reinterpret_cast<Bf16x8*>(out + base)[i] = result;
  }
}

// Qwen3's per-head RMSNorm: one warp per (token, head) over the query heads then the key heads
// of the fused QKV row, in place, rounded as rms_norm_kernel (HF's Qwen3RMSNorm is LlamaRMSNorm
// over head_dim). head_dim <= 256: eight values per lane at most.
constexpr int kHeadNormMaxPerLane = 8;
constexpr int kHeadNormWarpsPerBlock = 4;

__global__ void head_rms_norm_kernel(bf16* qkv, int rows, int num_heads, int num_kv_heads,
                                     int head_dim, const bf16* q_weight, const bf16* k_weight,
                                     float eps) {
  const int row = blockIdx.x * kHeadNormWarpsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;  // whole warps leave together: the shuffles below stay full-warp
  const int heads = num_heads + num_kv_heads;
  const int token = row / heads, head = row % heads;
  const int64_t row_stride = static_cast<int64_t>(num_heads + 2 * num_kv_heads) * head_dim;
  // The key heads follow the query heads in the fused row, so head h starts at h · head_dim.
  bf16* values = qkv + token * row_stride + static_cast<int64_t>(head) * head_dim;
  const bf16* weight = head < num_heads ? q_weight : k_weight;
  float x[kHeadNormMaxPerLane];
  float sum_squares = 0.0f;
#pragma unroll
  for (int j = 0; j < kHeadNormMaxPerLane; ++j) {
    const int i = lane + 32 * j;
    x[j] = i < head_dim ? __bfloat162float(values[i]) : 0.0f;
    sum_squares += x[j] * x[j];
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    sum_squares += __shfl_xor_sync(0xffffffffu, sum_squares, offset);
  }
  const float scale = rsqrtf(sum_squares / static_cast<float>(head_dim) + eps);
#pragma unroll
  for (int j = 0; j < kHeadNormMaxPerLane; ++j) {
    const int i = lane + 32 * j;
    if (i < head_dim) {
      const float normed = round_bf16(x[j] * scale);
      values[i] = __float2bfloat16(__bfloat162float(weight[i]) * normed);
    }
  }
}

// Blocks (token, group of kRopeHeadsPerBlock heads): thread i of a head rotates the pair
// (i, i + half), so a decode token spreads over (heads + kv heads) / 4 blocks rather than one.
// Transformers casts cos and sin to bf16 and rounds each product and the sum to bf16; so does
// this kernel. The value heads are copied to the cache by the same blocks, strided.
constexpr int kRopeHeadsPerBlock = 4;

__global__ void rope_kv_kernel(bf16* qkv, int num_heads, int num_kv_heads, int head_dim,
                               const int32_t* positions, const int32_t* slot_mapping,
                               const float* inv_freq, bf16* k_cache, bf16* v_cache) {
  const int t = blockIdx.x;
  const int half = head_dim / 2;
  const int q_dim = num_heads * head_dim, kv_dim = num_kv_heads * head_dim;
  bf16* row = qkv + static_cast<int64_t>(t) * (q_dim + 2 * kv_dim);
  const float position = static_cast<float>(positions[t]);
  const int64_t slot = slot_mapping[t];
  bf16* k_out = k_cache + slot * kv_dim;
  bf16* v_out = v_cache + slot * kv_dim;
  const int first_pair = blockIdx.y * kRopeHeadsPerBlock * half;
  const int pairs = min((num_heads + num_kv_heads) * half, first_pair + kRopeHeadsPerBlock * half);
  for (int p = first_pair + threadIdx.x; p < pairs; p += blockDim.x) {
    const int head = p / half, i = p % half;
    float c, s;
    rope::angle(position, inv_freq[i], c, s);
    bf16* x = row + head * head_dim;  // q heads, then k heads (contiguous in the fused row)
    const float x1 = __bfloat162float(x[i]), x2 = __bfloat162float(x[i + half]);
    bf16 y1, y2;
    rope::rotate(x1, x2, c, s, y1, y2);
    if (head < num_heads) {
      x[i] = y1;
      x[i + half] = y2;
    } else {
      bf16* k = k_out + (head - num_heads) * head_dim;
      k[i] = y1;
      k[i + half] = y2;
    }
  }
  const bf16* v = row + q_dim + kv_dim;
  for (int i = blockIdx.y * blockDim.x + threadIdx.x; i < kv_dim; i += gridDim.y * blockDim.x) {
    v_out[i] = v[i];
  }
}

// The int8 / fp8 cache: a warp per head vector of a token (query, key or value heads in the
// fused row's order), so that the absolute maximum a quantized vector needs is five shuffles.
// Lane l holds the pairs (i, i + head_dim/2) for i = l, l + 32, ... (kPairs of them). Queries
// are rotated in place exactly as rope_kv_kernel does; keys are rotated and rounded to bf16 (what
// a bf16 cache would hold), values taken as they are; each key or value vector is then quantized
// as quantize_row_int8 / quantize_row_e4m3 do on the host: scale = absmax / 127 (or / 448) with
// IEEE division, 1 for an all-zero vector, q = clamp(rne(x / scale), −127, 127) or the saturating
// E4M3 conversion, and the scale stored at [slot · num_kv_heads + head].
constexpr int kQuantWarpsPerBlock = 4;

template <int kPairs, bool kInt8>
__global__ void rope_kv_quant_kernel(bf16* qkv, int num_heads, int num_kv_heads, int head_dim,
                                     const int32_t* positions, const int32_t* slot_mapping,
                                     const float* inv_freq, KvLayerCache cache) {
  const int t = blockIdx.x;
  const int lane = threadIdx.x % 32;
  const int head = blockIdx.y * kQuantWarpsPerBlock + static_cast<int>(threadIdx.x / 32);
  if (head >= num_heads + 2 * num_kv_heads) return;  // whole warps
  const int half = head_dim / 2;
  const int q_dim = num_heads * head_dim, kv_dim = num_kv_heads * head_dim;
  bf16* x = qkv + static_cast<int64_t>(t) * (q_dim + 2 * kv_dim) + head * head_dim;
  const bool rotate = head < num_heads + num_kv_heads;
  const float position = static_cast<float>(positions[t]);
  float y[2 * kPairs];  // bf16 values: y[j] at i = lane + 32 j, y[kPairs + j] at i + half
#pragma unroll
  for (int j = 0; j < kPairs; ++j) {
    const int i = lane + 32 * j;
    y[j] = y[kPairs + j] = 0.0f;
    if (i >= half) continue;
    const float x1 = __bfloat162float(x[i]), x2 = __bfloat162float(x[i + half]);
    if (!rotate) {
      y[j] = x1;
      y[kPairs + j] = x2;
      continue;
    }
    float c, s;
    rope::angle(position, inv_freq[i], c, s);
    bf16 y1, y2;
    rope::rotate(x1, x2, c, s, y1, y2);
    if (head < num_heads) {
      x[i] = y1;
      x[i + half] = y2;
    }
    y[j] = __bfloat162float(y1);
    y[kPairs + j] = __bfloat162float(y2);
  }
  if (head < num_heads) return;

  float top = 0.0f;
#pragma unroll
  for (int j = 0; j < 2 * kPairs; ++j) top = fmaxf(top, fabsf(y[j]));
#pragma unroll
  for (int off = 16; off > 0; off /= 2) top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, off));
  constexpr float kLimit = kInt8 ? kInt8Max : kE4m3Max;
  const float scale = top > 0.0f ? __fdiv_rn(top, kLimit) : 1.0f;

  const bool is_key = rotate;
  const int kv_head = head - num_heads - (is_key ? 0 : num_kv_heads);
  const int64_t vector = static_cast<int64_t>(slot_mapping[t]) * num_kv_heads + kv_head;
  auto* out = static_cast<uint8_t*>(is_key ? cache.k : cache.v) + vector * head_dim;
#pragma unroll
  for (int j = 0; j < 2 * kPairs; ++j) {
    const int i = lane + 32 * (j % kPairs) + (j < kPairs ? 0 : half);
    if (lane + 32 * (j % kPairs) >= half) continue;
    const float ratio = __fdiv_rn(y[j], scale);
    if constexpr (kInt8) {
      const int q = min(max(__float2int_rn(ratio), -127), 127);
      out[i] = static_cast<uint8_t>(static_cast<int8_t>(q));
    } else {
      out[i] = __nv_cvt_float_to_fp8(ratio, __NV_SATFINITE, __NV_E4M3);
    }
  }
  if (lane == 0) (is_key ? cache.k_scale : cache.v_scale)[vector] = scale;
}

// One thread per 16-byte vector (or per element when the width is not a multiple of 8) over all
// tokens: a 1-D grid, since a token dimension in y would stop at 65535 tokens.
__global__ void silu_mul_kernel(const bf16* gate_up, int inter, int64_t total, bf16* out) {
  const int64_t index = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= total) return;
  auto one = [](bf16 g_bits, bf16 u_bits) {
    const float g = __bfloat162float(g_bits);
    const float silu = round_bf16(g / (1.0f + expf(-g)));
    return __float2bfloat16(silu * __bfloat162float(u_bits));
  };
  if (inter % kVector == 0) {
    const int per_token = inter / kVector;
    const int64_t t = index / per_token;
    const int i = static_cast<int>(index % per_token);
    const bf16* gate = gate_up + t * 2 * inter;
    const Bf16x8 g = reinterpret_cast<const Bf16x8*>(gate)[i];
    const Bf16x8 u = reinterpret_cast<const Bf16x8*>(gate + inter)[i];
    Bf16x8 result;
    for (int j = 0; j < kVector; ++j) result.v[j] = one(g.v[j], u.v[j]);
    reinterpret_cast<Bf16x8*>(out + t * inter)[i] = result;
  } else {
    const int64_t t = index / inter;
    const int64_t i = index % inter;
    out[t * inter + i] = one(gate_up[t * 2 * inter + i], gate_up[t * 2 * inter + inter + i]);
  }
}

template <int kPairs>
void launch_rope_kv_quant(bf16* qkv, int tokens, int num_heads, int num_kv_heads, int head_dim,
                          const int32_t* positions, const int32_t* slot_mapping,
                          const float* inv_freq, const KvLayerCache& cache, cudaStream_t stream) {
  const int heads = num_heads + 2 * num_kv_heads;
  const dim3 grid(static_cast<unsigned>(tokens),
                  static_cast<unsigned>((heads + kQuantWarpsPerBlock - 1) / kQuantWarpsPerBlock));
  if (cache.format == DType::int8) {
    rope_kv_quant_kernel<kPairs, true><<<grid, 32 * kQuantWarpsPerBlock, 0, stream>>>(
        qkv, num_heads, num_kv_heads, head_dim, positions, slot_mapping, inv_freq, cache);
  } else {
    rope_kv_quant_kernel<kPairs, false><<<grid, 32 * kQuantWarpsPerBlock, 0, stream>>>(
        qkv, num_heads, num_kv_heads, head_dim, positions, slot_mapping, inv_freq, cache);
  }
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void rope_kv_write_quantized(bf16* qkv, int tokens, int num_heads, int num_kv_heads, int head_dim,
                             const int32_t* positions, const int32_t* slot_mapping,
                             const float* inv_freq, const KvLayerCache& cache,
                             cudaStream_t stream) {
  if (cache.k == nullptr || cache.v == nullptr || cache.k_scale == nullptr ||
      cache.v_scale == nullptr) {
    throw std::invalid_argument("rope_kv_write: an int8 or fp8 cache needs k, v and both scales");
  }
  if (head_dim % 2 != 0 || head_dim > 256) {
    throw std::invalid_argument(
        "rope_kv_write: a quantized cache takes an even head_dim of at "
        "most 256, not " +
        std::to_string(head_dim));
  }
  const int half = head_dim / 2;
  if (half <= 32) {
    launch_rope_kv_quant<1>(qkv, tokens, num_heads, num_kv_heads, head_dim, positions, slot_mapping,
                            inv_freq, cache, stream);
  } else if (half <= 64) {
    launch_rope_kv_quant<2>(qkv, tokens, num_heads, num_kv_heads, head_dim, positions, slot_mapping,
                            inv_freq, cache, stream);
  } else {
    launch_rope_kv_quant<4>(qkv, tokens, num_heads, num_kv_heads, head_dim, positions, slot_mapping,
                            inv_freq, cache, stream);
  }
}

}  // namespace

void embedding_gather(const bf16* table, const int32_t* ids, int tokens, int hidden, bf16* out,
                      cudaStream_t stream) {
  if (tokens == 0) return;
  embedding_kernel<<<tokens, row_threads(hidden), 0, stream>>>(table, ids, hidden, out);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void rms_norm(const bf16* x, const bf16* weight, int rows, int hidden, float eps, bf16* out,
              cudaStream_t stream) {
  if (rows == 0) return;
  bf16* input = const_cast<bf16*>(x);  // read only: the kernel writes x only when adding
  if (vectorizable(hidden)) {
    rms_norm_vec_kernel<false>
        <<<rows, row_threads(hidden), 0, stream>>>(input, nullptr, weight, hidden, eps, out);
  } else {
    rms_norm_kernel<false><<<rows, 256, 0, stream>>>(input, nullptr, weight, hidden, eps, out);
  }
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void add_rms_norm(bf16* residual, const bf16* delta, const bf16* weight, int rows, int hidden,
                  float eps, bf16* out, cudaStream_t stream) {
  if (rows == 0) return;
  if (vectorizable(hidden)) {
    rms_norm_vec_kernel<true>
        <<<rows, row_threads(hidden), 0, stream>>>(residual, delta, weight, hidden, eps, out);
  } else {
    rms_norm_kernel<true><<<rows, 256, 0, stream>>>(residual, delta, weight, hidden, eps, out);
  }
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void rope_kv_write(bf16* qkv, int tokens, int num_heads, int num_kv_heads, int head_dim,
                   const int32_t* positions, const int32_t* slot_mapping, const float* inv_freq,
                   const KvLayerCache& cache, cudaStream_t stream) {
  if (tokens == 0) return;
  if (cache.format == DType::int8 || cache.format == DType::fp8) {
    rope_kv_write_quantized(qkv, tokens, num_heads, num_kv_heads, head_dim, positions, slot_mapping,
                            inv_freq, cache, stream);
    return;
  }
  if (cache.format != DType::bf16) {
    throw std::invalid_argument("rope_kv_write: the cache must be bf16, int8 or fp8, not " +
                                std::string(dtype_name(cache.format)));
  }
  auto* k_cache = static_cast<bf16*>(cache.k);
  auto* v_cache = static_cast<bf16*>(cache.v);
  const int heads = num_heads + num_kv_heads;
  const int block_pairs = kRopeHeadsPerBlock * head_dim / 2;
  const int threads = block_pairs >= 256 ? 256 : ((block_pairs + 31) / 32) * 32;
  const dim3 grid(static_cast<unsigned>(tokens),
                  static_cast<unsigned>((heads + kRopeHeadsPerBlock - 1) / kRopeHeadsPerBlock));
  rope_kv_kernel<<<grid, threads, 0, stream>>>(qkv, num_heads, num_kv_heads, head_dim, positions,
                                               slot_mapping, inv_freq, k_cache, v_cache);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void head_rms_norm(bf16* qkv, int tokens, int num_heads, int num_kv_heads, int head_dim,
                   const bf16* q_weight, const bf16* k_weight, float eps, cudaStream_t stream) {
  if (tokens == 0) return;
  if (head_dim < 1 || head_dim > 32 * kHeadNormMaxPerLane) {
    throw std::invalid_argument("head_rms_norm: head_dim must be in [1, 256]");
  }
  const int rows = tokens * (num_heads + num_kv_heads);
  const int blocks = (rows + kHeadNormWarpsPerBlock - 1) / kHeadNormWarpsPerBlock;
  head_rms_norm_kernel<<<blocks, 32 * kHeadNormWarpsPerBlock, 0, stream>>>(
      qkv, rows, num_heads, num_kv_heads, head_dim, q_weight, k_weight, eps);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void silu_mul_halves(const bf16* gate_up, int tokens, int inter, bf16* out, cudaStream_t stream) {
  if (tokens == 0) return;
  constexpr int kThreads = 256;
  const int64_t total =
      static_cast<int64_t>(tokens) * (vectorizable(inter) ? inter / kVector : inter);
  const auto blocks = static_cast<unsigned>((total + kThreads - 1) / kThreads);
  silu_mul_kernel<<<blocks, kThreads, 0, stream>>>(gate_up, inter, total, out);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void gather_rows(const bf16* x, const int32_t* rows, int count, int hidden, bf16* out,
                 cudaStream_t stream) {
  if (count == 0) return;
  embedding_kernel<<<count, row_threads(hidden), 0, stream>>>(x, rows, hidden, out);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace inferlab::engine::cuda
