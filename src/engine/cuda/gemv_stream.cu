// The streaming GEMV (gemv_stream.hpp): kernels and launcher.
//
// Two numbers for the Llama 3 8B decode step at batch 1 (bf16): 15.0 GB of projection weights,
// 3.5 ms at 4.3 TB/s (the H200's measured copy rate); a layer's gate/up matrix is 235 MB, 55 µs.
// Inputs are a few KB per row, read from L2 once per block into shared memory.
//
// Input staging per format (what the per-vector arithmetic reads from shared memory):
//   bf16 weights:        the bf16 input as is (fp32 FMAs).
//   int8 weight-only:    fp16 of x · 240 / absmax(x): |w·x'| ≤ 128·240, so a pair of products
//                        sums in fp16 without overflow before it goes to fp32.
//   int4 weight-only:    integers, for dp4a (stage_int4): each 32-element block of x (one weight
//                        vector's span) multiplied by its own power of two 2^-e so that its largest
//                        |x'| is in [2^14, 2^15), x' = rint(x · 2^-e) (exact for elements within
//                        2^-7 of that largest: bf16 has 8 bits of mantissa), split into a low byte
//                        plane (unsigned) and a high byte plane (signed), plus the block's Σx' (the
//                        zero's term) and 2^(e − e_row). A vector's Σ(q − z)·x' is an exact int32.
//   fp8 (E4M3 weights):  the input's E4M3 codes (quantize_row_e4m3's) / 512 in fp16, exact, so
//                        that a product of two E4M3 values (≤ 448·448) stays in fp16's range;
//                        eight products sum there, then fp32.
//   W8A8:                the input's int8 codes (quantize_row_int8's); dp4a, exact int32.
// fp16 holds every product above exactly or to 2^-11 relative, far under the bf16 output's
// rounding; each fp16 partial sum goes to an fp32 accumulator. int4's sums are exact until the
// vector's sum meets its scales in fp32: its input is x rounded to 2^-15 of its block's largest
// value, the fp16 path's 2^-11 relative error on every partial sum being the larger.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/gemv_rows.cuh"
#include "engine/cuda/gemv_stream.hpp"
#include "engine/cuda/gemv_stream_common.cuh"
#include "engine/cuda/gemv_stream_stage.cuh"
#include "engine/cuda/programmatic_launch.cuh"
#include "engine/cuda/rope_device.cuh"

namespace inferlab::engine::cuda {

namespace {

using namespace gemv_stream_detail;  // NOLINT: the kernel's own definitions, split for size
using gemv::round_bf16;

__device__ __forceinline__ uint4 load_stream(const uint8_t* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ uint32_t word_of(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

__device__ __forceinline__ __half2 as_half2(uint32_t bits) {
  return *reinterpret_cast<const __half2*>(&bits);
}

// Σ of four byte products plus c: unsigned weights (int4 nibbles as bytes) against unsigned
// (the input's low plane) or signed bytes (its high plane).
__device__ __forceinline__ int dp4a_unsigned(uint32_t a, uint32_t b, int c) {
  int d;
  asm("dp4a.u32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

__device__ __forceinline__ int dp4a_signed(uint32_t a, uint32_t b, int c) {
  int d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

__device__ __forceinline__ float sum_half2(__half2 h) {
  const float2 f = __half22float2(h);
  return f.x + f.y;
}

// One weight vector (16 bytes at element k of a row) against input row b: its contribution,
// the group scale applied for int4.
template <Fmt F>
__device__ __forceinline__ float dot_vector(const uint4& w, uint32_t aux, const unsigned char* xrow,
                                            int k, int in) {
  const unsigned char* xp = xrow + staged_offset<F>(k, in);
  // Piece i of this vector's input (piece-major staging: one row's vectors apart).
  const int64_t piece_stride = static_cast<int64_t>(in / Traits<F>::kElems) * 16;
  if constexpr (F == Fmt::bf16) {
    const uint4 xv = *reinterpret_cast<const uint4*>(xp);
    float wf[8], xf[8];
    gemv::unpack_bf16(w, wf);
    gemv::unpack_bf16(xv, xf);
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j) sum = fmaf(wf[j], xf[j], sum);
    return sum;
  } else if constexpr (F == Fmt::int8) {
    // Bytes b → fp16 1024 + (b + 128) by the 0x6400 magic, minus 1152: b exactly.
    const __half2 bias = __half2half2(__ushort_as_half(0x6480));  // 1152
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t u = word_of(w, i) ^ 0x80808080u;
      const __half2 w01 = __hsub2(as_half2(__byte_perm(u, 0x64646464u, 0x4140)), bias);
      const __half2 w23 = __hsub2(as_half2(__byte_perm(u, 0x64646464u, 0x4342)), bias);
      const uint2 xv = *reinterpret_cast<const uint2*>(xp + (i / 2) * piece_stride + 8 * (i % 2));
      sum += sum_half2(__hadd2(__hmul2(w01, as_half2(xv.x)), __hmul2(w23, as_half2(xv.y))));
    }
    return sum;
  } else if constexpr (F == Fmt::int4) {
    // Even nibbles (weights 0, 2, 4, 6 of a word) and odd ones as bytes, against the staged
    // planes (stage_int4): Σq·x' = 256·Σq·high + Σq·low, exact in int32 (|Σq·x'| ≤ 15·2^15·32).
    // Seven instructions a word where the fp16 route took thirteen. aux: the group's fp16 scale in
    // the high half, its zero in the low byte (load_aux).
    int low = 0, high = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t q = word_of(w, i);
      const uint32_t even = q & 0x0f0f0f0fu, odd = (q >> 4) & 0x0f0f0f0fu;
      const uint4 xv = *reinterpret_cast<const uint4*>(xp + i * piece_stride);
      low = dp4a_unsigned(even, xv.x, low);
      low = dp4a_unsigned(odd, xv.y, low);
      high = dp4a_signed(even, xv.z, high);
      high = dp4a_signed(odd, xv.w, high);
    }
    const Int4Block block =
        reinterpret_cast<const Int4Block*>(xrow + static_cast<int64_t>(in) * 2)[k / 32];
    const int zero = static_cast<int>(aux & 0xffu);
    const int sum = high * 256 + low - zero * block.sum;  // Σ(q − z)·x', exact
    const float scale = __half2float(__ushort_as_half(static_cast<unsigned short>(aux >> 16)));
    return static_cast<float>(sum) * (scale * block.relative_scale);
  } else if constexpr (F == Fmt::fp8) {
    __half2 part = __float2half2_rn(0.0f);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t codes = word_of(w, i);
      const uint2 xv = *reinterpret_cast<const uint2*>(xp + (i / 2) * piece_stride + 8 * (i % 2));
      const __half2_raw lo =
          __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(codes & 0xffffu), __NV_E4M3);
      const __half2_raw hi =
          __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(codes >> 16), __NV_E4M3);
      part = __hfma2(__half2(lo), as_half2(xv.x), part);
      part = __hfma2(__half2(hi), as_half2(xv.y), part);
    }
    return sum_half2(part) * 512.0f;
  } else {
    const uint4 xv = *reinterpret_cast<const uint4*>(xp);
    int acc = 0;
    acc = __dp4a(static_cast<int>(w.x), static_cast<int>(xv.x), acc);
    acc = __dp4a(static_cast<int>(w.y), static_cast<int>(xv.y), acc);
    acc = __dp4a(static_cast<int>(w.z), static_cast<int>(xv.z), acc);
    acc = __dp4a(static_cast<int>(w.w), static_cast<int>(xv.w), acc);
    return static_cast<float>(acc);
  }
}

// The finished value of weight row `row` for input row b: sum (already reduced over the warp)
// with the row's and the input's scales and the bias.
template <Fmt F>
__device__ __forceinline__ float finish(float sum, const Params& p, int64_t row, float x_factor) {
  float v = sum * x_factor;
  if constexpr (F == Fmt::int8 || F == Fmt::fp8 || F == Fmt::w8a8) v *= p.scales[row];
  if (p.bias != nullptr) v += __bfloat162float(p.bias[row]);
  return v;
}

// Bytes of an int4 row's group scales and zeros, through the non-coherent path (read-only for
// the kernel's life) and by volatile asm, so that they go out with the weights' loads at the top
// of the step rather than being sunk towards their use a step later.
__device__ __forceinline__ uint32_t load_u16_nc(const __half* p) {
  unsigned short v;
  asm volatile("ld.global.nc.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}

__device__ __forceinline__ uint32_t load_u8_nc(const uint8_t* p) {
  unsigned short v;
  asm volatile("ld.global.nc.u8 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}

// The group scale and zero of an int4 row's group `at` (row · groups + group), packed as
// dot_vector reads them: the scale's fp16 bits in the high half, the zero in the low byte.
__device__ __forceinline__ uint32_t load_group_aux(const Params& p, int64_t at) {
  return (load_u16_nc(p.group_scales + at) << 16) | load_u8_nc(p.zeros + at);
}

// kRope's epilogue for input row b: rows (r0, r1) = (i, i + d/2) of head t / (d/2) stored as
// the plain GEMV stores them, then what rope_kv_kernel (layer_kernels.cu) does to that pair with
// the same bits: a query pair rotated in place; a key pair rotated into the cache (the stored row
// keeps the unrotated key, as rope_kv_write leaves it); a value pair copied into the cache.
// inv_freq[i], the row's position and slot come loaded (a load here would be a memory trip on
// the warp's path at every task's end: the first build, which loaded them here, ran Llama 3 8B's
// bf16 and fp8 steps no faster than with RoPE as its own kernel).
__device__ __forceinline__ void store_rope_pair(const Params& p, int task, int b, float v0,
                                                float v1, float inv_freq, float position,
                                                int64_t slot) {
  const int half = p.head_dim / 2, head = task / half, i = task % half;
  const int64_t r0 = static_cast<int64_t>(head) * p.head_dim + i;
  bf16* y = static_cast<bf16*>(p.y) + static_cast<int64_t>(b) * p.out_rows;
  const bf16 x1 = __float2bfloat16(v0), x2 = __float2bfloat16(v1);
  if (head < p.heads + p.kv_heads) {
    float c, s;
    rope::angle(position, inv_freq, c, s);
    bf16 y1, y2;
    rope::rotate(__bfloat162float(x1), __bfloat162float(x2), c, s, y1, y2);
    if (head < p.heads) {
      y[r0] = y1;
      y[r0 + half] = y2;
      return;
    }
    bf16* k = p.k_cache + (slot * p.kv_heads + (head - p.heads)) * p.head_dim;
    k[i] = y1;
    k[i + half] = y2;
  } else {
    bf16* v = p.v_cache + (slot * p.kv_heads + (head - p.heads - p.kv_heads)) * p.head_dim;
    v[i] = x1;
    v[i + half] = x2;
  }
  y[r0] = x1;
  y[r0 + half] = x2;
}

// The group scale and zero of an int4 weight vector.
__device__ __forceinline__ uint32_t load_aux(const Params& p, int64_t row, int64_t vector) {
  // A shift where the group is a power-of-two number of vectors (every shipped size): an
  // integer division per vector cost issue slots the dequantization needs.
  const int64_t group = p.vectors_per_group_log2 >= 0 ? vector >> p.vectors_per_group_log2
                                                      : (vector * 32) / p.group_size;
  return load_group_aux(p, row * p.groups + group);
}

// The warp's loop runs over steps (task, stage): the loads of the next step, the next task's
// first stage included, go out before this step's arithmetic, so a task whose rows fit in one
// stage (int4: a 4096-wide row is 128 vectors) still has its successor's bytes in flight.
// A full stage of two rows (all but a row's last partial stage and an odd matrix's last row)
// loads and adds without a test a vector, and int4 finds its groups by shifts: with the group
// scales loaded at the top of the step by volatile asm, Llama 3 8B's int4 decode step went from
// 2.449 to 2.090 ms on the H200, bf16 4.368 to 4.276, fp8 2.907 to 2.890 (MEASUREMENTS §57;
// the tests a vector had made every load a branch of its own, and the compiler had sunk the
// scales' loads towards their use). Two register buffers used in turn instead of the copy of
// the next into the current (40 moves a step for int4) ran slower: 2.411 -> 2.478 ms (§57).
template <Fmt F, int B, int E>
__global__ void __launch_bounds__(kThreads, kMinBlocksFor<F, B, E>)
    gemv_stream_kernel(const Params p) {
  constexpr int V = kLaneVectors<F>;
  static_assert(V == 2 || V == 4, "the launch bounds are set for 2 and 4 vectors a lane");
  extern __shared__ __align__(16) unsigned char smem[];
  float* head = reinterpret_cast<float*>(smem);
  unsigned char* xs = smem + ((kHeadFloats * 4 + 15) / 16) * 16;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t vectors = p.row_bytes / 16;
  const int stages = static_cast<int>((vectors + 32 * V - 1) / (32 * V));
  const int stride = gridDim.x * kWarps;

  // The two weight rows of task t: features 2t and 2t + 1, SwiGLU's gate and up rows of t, or
  // kRope's pair (i, i + d/2) of head t / (d/2).
  struct Rows {
    int64_t r0 = 0, r1 = 0;
    bool ok1 = false;
    float inv_freq = 0.0f;  // kRope: the pair's frequency, loaded a step before its epilogue
  };
  auto rows_of = [&](int t) {
    Rows r;
    if (E == kSwiglu) {
      r.r0 = t;
      r.r1 = static_cast<int64_t>(p.features) + t;
      r.ok1 = true;
    } else if (E == kRope) {  // the pair RoPE rotates together: i and i + d/2 of one head
      const int half = p.head_dim / 2;
      r.r0 = static_cast<int64_t>(t / half) * p.head_dim + t % half;
      r.r1 = r.r0 + half;
      r.ok1 = true;
      if (t < p.tasks) r.inv_freq = __ldg(p.inv_freq + t % half);
    } else {
      r.r0 = 2 * static_cast<int64_t>(t);
      r.r1 = r.r0 + 1;
      r.ok1 = r.r1 < p.out_rows;
    }
    return r;
  };
  uint4 cur[2][V], next[2][V];
  uint32_t cur_aux[2][V], next_aux[2][V];
  auto load_stage = [&](uint4(&dst)[2][V], uint32_t(&aux)[2][V], const Rows& r, int s) {
    const int64_t first = static_cast<int64_t>(s) * 32 * V;
    const int g = p.vectors_per_group_log2;
    // Every vector of both rows there, and int4's groups a power of two vectors (every shipped
    // shape but a row's last partial stage and an odd matrix's last row): no test a vector, no
    // division; the group of vector first + 32u + lane is (first + 32u) >> g plus lane >> g.
    if (first + 32 * V <= vectors && r.ok1 && (F != Fmt::int4 || g >= 0)) {
      const uint8_t* w0 = p.w + r.r0 * p.row_bytes + 16 * (first + lane);
      const uint8_t* w1 = p.w + r.r1 * p.row_bytes + 16 * (first + lane);
#pragma unroll
      for (int u = 0; u < V; ++u) {
        dst[0][u] = load_stream(w0 + 512 * u);
        dst[1][u] = load_stream(w1 + 512 * u);
      }
      if constexpr (F == Fmt::int4) {
        const int64_t g0 = r.r0 * p.groups + (lane >> g), g1 = r.r1 * p.groups + (lane >> g);
#pragma unroll
        for (int u = 0; u < V; ++u) {
          const int64_t group = (first + 32 * u) >> g;
          aux[0][u] = load_group_aux(p, g0 + group);
          aux[1][u] = load_group_aux(p, g1 + group);
        }
      }
      return;
    }
#pragma unroll
    for (int u = 0; u < V; ++u) {
      const int64_t v = first + u * 32 + lane;
      const bool in = v < vectors, in1 = in && r.ok1;
      dst[0][u] = in ? load_stream(p.w + r.r0 * p.row_bytes + 16 * v) : make_uint4(0, 0, 0, 0);
      dst[1][u] = in1 ? load_stream(p.w + r.r1 * p.row_bytes + 16 * v) : make_uint4(0, 0, 0, 0);
      if constexpr (F == Fmt::int4) {
        aux[0][u] = in ? load_aux(p, r.r0, v) : 0u;
        aux[1][u] = in1 ? load_aux(p, r.r1, v) : 0u;
      }
    }
  };

  int task = blockIdx.x * kWarps + warp, stage = 0;
  Rows rows = rows_of(task);
  // The first loads go out before the input is staged, so HBM is busy meanwhile; launched
  // programmatically, before the previous kernel has finished (they read weights only, and
  // kRope's inv_freq, uploaded once when the backend opens).
  if (task < p.tasks) load_stage(cur, cur_aux, rows, 0);
  wait_for_prerequisite_grid();  // the input, the residual and the outputs: the previous kernel's
  if (p.allow_early) allow_dependent_grid();
  stage_input<F>(p, head, xs);
  float rope_position[B];  // kRope: each input row's position and cache slot
  int64_t rope_slot[B];
#pragma unroll
  for (int b = 0; b < B; ++b) {
    rope_position[b] = E == kRope ? static_cast<float>(p.positions[b]) : 0.0f;
    rope_slot[b] = E == kRope ? p.slots[b] : 0;
  }
  const float* x_factor = head + 2 * 32 + 2 + 2 * kWarps;

  float acc[2][B];
#pragma unroll
  for (int j = 0; j < 2; ++j)
#pragma unroll
    for (int b = 0; b < B; ++b) acc[j][b] = 0.0f;
  while (task < p.tasks) {
    int next_task = task, next_stage = stage + 1;
    if (next_stage == stages) {
      next_task = task + stride;
      next_stage = 0;
    }
    const Rows next_rows = rows_of(next_task);
    if (next_task < p.tasks) load_stage(next, next_aux, next_rows, next_stage);
    // Vector u of the stage for both rows (`both`) or the first, into the sums.
    auto add_vector = [&](int u, bool both) {
      const int k = (stage * 32 * V + u * 32 + lane) * Traits<F>::kElems;
#pragma unroll
      for (int b = 0; b < B; ++b) {
        const unsigned char* xrow = xs + b * staged_row_bytes<F>(p.in);
        acc[0][b] += dot_vector<F>(cur[0][u], cur_aux[0][u], xrow, k, p.in);
        if (both) acc[1][b] += dot_vector<F>(cur[1][u], cur_aux[1][u], xrow, k, p.in);
      }
    };
    if (static_cast<int64_t>(stage + 1) * 32 * V <= vectors && rows.ok1) {
#pragma unroll
      for (int u = 0; u < V; ++u) add_vector(u, true);  // a full stage: no test a vector
    } else {
#pragma unroll
      for (int u = 0; u < V; ++u) {
        if (static_cast<int64_t>(stage) * 32 * V + u * 32 + lane < vectors) {
          add_vector(u, rows.ok1);
        }
      }
    }
    if (stage == stages - 1) {  // the task's sums are complete: reduce, finish, store
#pragma unroll
      for (int b = 0; b < B; ++b) {
        const float v0 = finish<F>(gemv::warp_sum(acc[0][b]), p, rows.r0, x_factor[b]);
        const float v1 =
            rows.ok1 ? finish<F>(gemv::warp_sum(acc[1][b]), p, rows.r1, x_factor[b]) : 0.0f;
        acc[0][b] = acc[1][b] = 0.0f;
        if (lane != 0) continue;
        if (E == kSwiglu) {
          const float gate = round_bf16(v0), up = round_bf16(v1);
          // as silu_mul_halves
          const float silu = round_bf16(gate / (1.0f + expf(-gate)));
          static_cast<bf16*>(p.y)[static_cast<int64_t>(b) * p.features + task] =
              __float2bfloat16(silu * up);
        } else if (E == kRope) {
          store_rope_pair(p, task, b, v0, v1, rows.inv_freq, rope_position[b], rope_slot[b]);
        } else if (E == kResidual) {
          bf16* res = p.residual + static_cast<int64_t>(b) * p.out_rows;
          res[rows.r0] = __float2bfloat16(__bfloat162float(res[rows.r0]) + round_bf16(v0));
          if (rows.ok1) {
            res[rows.r1] = __float2bfloat16(__bfloat162float(res[rows.r1]) + round_bf16(v1));
          }
        } else if (p.y_fp32) {
          float* y = static_cast<float*>(p.y) + static_cast<int64_t>(b) * p.out_rows;
          y[rows.r0] = v0;
          if (rows.ok1) y[rows.r1] = v1;
        } else {
          bf16* y = static_cast<bf16*>(p.y) + static_cast<int64_t>(b) * p.out_rows;
          y[rows.r0] = __float2bfloat16(v0);
          if (rows.ok1) y[rows.r1] = __float2bfloat16(v1);
        }
      }
    }
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int u = 0; u < V; ++u) {
        cur[j][u] = next[j][u];
        cur_aux[j][u] = next_aux[j][u];
      }
    task = next_task;
    stage = next_stage;
    rows = next_rows;
  }
  if (!p.allow_early) allow_dependent_grid();
}

int head_bytes() {
  return (kHeadFloats * 4 + 15) / 16 * 16;
}

int sm_count() {
  static std::atomic<int> cached{0};
  if (cached.load() == 0) {
    int device = 0, count = 0;
    INFERLAB_CUDA_CHECK(cudaGetDevice(&device));
    INFERLAB_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    cached.store(count);
  }
  return cached.load();
}

template <Fmt F, int B, int E>
void launch_kernel(const Params& p, cudaStream_t stream) {
  const int smem = static_cast<int>(head_bytes() + staged_bytes<F>(B, p.in));
  // Raised once per instantiation and GPU (beyond 48 KB of dynamic shared memory needs it), and
  // the resident blocks per SM read once, for the persistent grid.
  static std::atomic<uint64_t> limit_set{0};
  once_per_device(limit_set, [] {
    INFERLAB_CUDA_CHECK(cudaFuncSetAttribute(gemv_stream_kernel<F, B, E>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             head_bytes() + kStageBytes));
  });
  static const int per_sm = [smem] {
    int blocks = 0;
    INFERLAB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &blocks, gemv_stream_kernel<F, B, E>, kThreads, smem));
    return std::max(blocks, 1);
  }();
  const int blocks_needed = (p.tasks + kWarps - 1) / kWarps;
  const int grid = std::max(1, std::min(blocks_needed, sm_count() * per_sm));
  launch_maybe_programmatic(gemv_stream_kernel<F, B, E>, dim3(grid), dim3(kThreads),
                            static_cast<size_t>(smem), p.programmatic, stream,
                            "streaming GEMV launch", p);
}

template <Fmt F, int B>
void launch_epilogue(const Params& p, GemvFused::Epilogue e, cudaStream_t stream) {
  switch (e) {
    case GemvFused::Epilogue::store:
      return launch_kernel<F, B, kStore>(p, stream);
    case GemvFused::Epilogue::residual_add:
      return launch_kernel<F, B, kResidual>(p, stream);
    case GemvFused::Epilogue::swiglu:
      return launch_kernel<F, B, kSwiglu>(p, stream);
    case GemvFused::Epilogue::rope_kv_write:
      return launch_kernel<F, B, kRope>(p, stream);
  }
}

template <Fmt F>
void launch_format(const Params& p, GemvFused::Epilogue e, cudaStream_t stream) {
  if (p.rows == 1) return launch_epilogue<F, 1>(p, e, stream);
  return launch_epilogue<F, 2>(p, e, stream);
}

bool format_of(const DeviceMatrix& w, Fmt* f) {
  if (w.format == DType::bf16 && w.input_format == DType::bf16) return *f = Fmt::bf16, true;
  if (w.format == DType::int8 && w.input_format == DType::bf16) return *f = Fmt::int8, true;
  if (w.format == DType::int4 && w.input_format == DType::bf16) return *f = Fmt::int4, true;
  if (w.format == DType::fp8 && w.input_format == DType::fp8) return *f = Fmt::fp8, true;
  if (w.format == DType::int8 && w.input_format == DType::int8) return *f = Fmt::w8a8, true;
  return false;
}

int64_t row_bytes_of(Fmt f, int64_t in) {
  return f == Fmt::bf16 ? 2 * in : f == Fmt::int4 ? in / 2 : in;
}

}  // namespace

// The layout stages what the shared rule counts (at two rows of Llama 3 70B's widths).
static_assert(staged_bytes<Fmt::int4>(2, 28672) ==
              engine_gemv_stream_staged_bytes(DType::int4, false, 2, 28672));
static_assert(staged_bytes<Fmt::bf16>(2, 28672) ==
              engine_gemv_stream_staged_bytes(DType::bf16, false, 2, 28672));
static_assert(staged_bytes<Fmt::w8a8>(2, 8200) <=
              engine_gemv_stream_staged_bytes(DType::int8, true, 2, 8200));

bool gemv_stream_supported(int64_t rows, const DeviceMatrix& w) {
  Fmt f;
  if (rows < 1 || rows > kGemvStreamMaxRows || !format_of(w, &f)) return false;
  // Whole 16-byte vectors per row; int4 groups of whole vectors (32 weights).
  const int64_t row_bytes = row_bytes_of(f, w.in);
  if (w.in % 8 != 0 || row_bytes % 16 != 0 || w.in > (int64_t{1} << 30)) return false;
  if (f == Fmt::int4 && (w.group_size < 32 || w.group_size % 32 != 0)) return false;
  if (reinterpret_cast<uintptr_t>(w.data) % 16 != 0) return false;
  // The rule the prediction reads too (model/engine_gemv_rows.hpp); the layout below never
  // stages more (W8A8's rows are not each rounded to 16 bytes here).
  return engine_gemv_stream_staged_bytes(w.format, f == Fmt::w8a8, rows, w.in) <= kStageBytes;
}

bool gemv_stream_rope_fits(const DeviceMatrix& w, const GemvFused::Rope& r) {
  return r.num_heads >= 1 && r.num_kv_heads >= 1 && r.head_dim >= 2 && r.head_dim % 2 == 0 &&
         w.out == static_cast<int64_t>(r.num_heads + 2 * r.num_kv_heads) * r.head_dim;
}

GemvStreamPdl gemv_stream_default_pdl(const DeviceMatrix& w) {
  // Llama 3 8B decode steps on the H200, off / early / late: int4 3.156 / 2.971 / 3.047 ms,
  // bf16 4.365 / 4.722 / 4.682 ms (MEASUREMENTS §45), fp8 3.017 / 3.217 / 3.010 ms (§46).
  return engine_gemv_stream_programmatic(w.format) ? GemvStreamPdl::early : GemvStreamPdl::off;
}

void launch_gemv_stream(const GemvStreamCall& c, cudaStream_t stream) {
  const DeviceMatrix& w = *c.w;
  Fmt f;
  if (!gemv_stream_supported(c.rows, w) || !format_of(w, &f)) {
    throw std::invalid_argument("launch_gemv_stream: not a shape the streaming GEMV takes");
  }
  Params p{};
  p.w = static_cast<const uint8_t*>(w.data);
  p.row_bytes = row_bytes_of(f, w.in);
  p.in = static_cast<int>(w.in);
  p.out_rows = static_cast<int>(w.out);
  const bool swiglu = c.epilogue == GemvFused::Epilogue::swiglu;
  const bool rope = c.epilogue == GemvFused::Epilogue::rope_kv_write;
  if (rope && !gemv_stream_rope_fits(w, c.rope)) {
    throw std::invalid_argument("launch_gemv_stream: the RoPE epilogue needs the fused QKV rows");
  }
  p.features = swiglu ? p.out_rows / 2 : p.out_rows;
  p.tasks = swiglu ? p.features : (p.out_rows + 1) / 2;  // RoPE: (H + 2 Hkv)·d/2 pairs, d even
  p.heads = c.rope.num_heads;
  p.kv_heads = c.rope.num_kv_heads;
  p.head_dim = c.rope.head_dim;
  p.positions = c.rope.positions;
  p.slots = c.rope.slots;
  p.inv_freq = c.rope.inv_freq;
  p.k_cache = c.rope.k_cache;
  p.v_cache = c.rope.v_cache;
  p.scales = w.scales;
  p.group_scales = w.group_scales;
  p.zeros = w.zeros;
  p.group_size = static_cast<int>(w.group_size);
  p.groups = w.group_size > 0 ? static_cast<int>(w.in / w.group_size) : 0;
  p.vectors_per_group_log2 = -1;
  for (int shift = 0; shift < 30 && w.group_size > 0; ++shift) {
    if (int64_t{32} << shift == w.group_size) p.vectors_per_group_log2 = shift;
  }
  p.x = c.x;
  p.rows = c.rows;
  p.norm_weight = c.norm_weight;
  p.eps = c.eps;
  p.bias = c.bias;
  p.y = c.y;
  p.y_fp32 = c.y_fp32;
  p.residual = c.residual;
  p.programmatic = c.pdl != GemvStreamPdl::off;
  p.allow_early = c.pdl == GemvStreamPdl::early;
  if (p.tasks == 0) return;
  switch (f) {
    case Fmt::bf16:
      return launch_format<Fmt::bf16>(p, c.epilogue, stream);
    case Fmt::int8:
      return launch_format<Fmt::int8>(p, c.epilogue, stream);
    case Fmt::int4:
      return launch_format<Fmt::int4>(p, c.epilogue, stream);
    case Fmt::fp8:
      return launch_format<Fmt::fp8>(p, c.epilogue, stream);
    case Fmt::w8a8:
      return launch_format<Fmt::w8a8>(p, c.epilogue, stream);
  }
}

}  // namespace inferlab::engine::cuda
