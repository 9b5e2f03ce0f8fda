#pragma once
// Device building blocks of the GEMV kernels: the streaming weight load, the mma.sync wrappers
// and, per kernel family, how one 64-byte chunk of two weight rows becomes tensor-core
// fragments.
//
// Fragments (PTX ISA, mma.m16n8k16 / m16n8k32): lane = 4 g + t. A's registers hold rows g and
// g + 8 at "virtual" columns {2t, 2t+1} and {2t+8, 2t+9} (k16), or {4t..4t+3} and {4t+16..}
// (k32 int8); B's hold the same virtual k of batch column g; C holds rows g and g + 8 at batch
// columns 2t, 2t+1. A dot product does not care in which order k is visited, so each lane feeds
// the mma the k values of its own 16-byte weight vector (the quad's 4 lanes read 64 contiguous
// bytes of each row) and the matching x values: the same actual k in A and B, a function of t
// alone, so no weight needs to move between lanes. Only int4 pairs nibbles (n, n+4) of a word,
// which the staged x mirrors (each 8-element group stored as 0,4,1,5,2,6,3,7).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "engine/cuda/gemv_launch.hpp"

namespace inferlab::engine::cuda::gemv {

// A weight vector is read once: not kept in L1 (the staged x lives in shared memory).
__device__ __forceinline__ uint4 load_weights(const unsigned char* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ uint4 load_shared16(const unsigned char* p) {
  return *reinterpret_cast<const uint4*>(p);
}

__device__ __forceinline__ uint32_t word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma_f16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                        uint32_t a3, uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma_s8(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                       uint32_t a3, uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t bf16x2_sub(uint32_t a, uint32_t b) {
  __nv_bfloat162 x, y;
  memcpy(&x, &a, 4);
  memcpy(&y, &b, 4);
  const __nv_bfloat162 d = __hsub2(x, y);
  uint32_t r;
  memcpy(&r, &d, 4);
  return r;
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const uint32_t a = __bfloat16_as_ushort(__float2bfloat16(lo));
  const uint32_t b = __bfloat16_as_ushort(__float2bfloat16(hi));
  return a | (b << 16);
}

// Four int8 (one word, k .. k+3) as two bf16x2 pairs (k, k+1) and (k+2, k+3), exactly:
// 0x43XX is the bf16 128 + XX for XX < 128, so (128 + low 7 bits) − (128 + 128 · sign) = q.
__device__ __forceinline__ void int8x4_to_bf16(uint32_t w, uint32_t& lo, uint32_t& hi) {
  const uint32_t low7 = w & 0x7f7f7f7fu, sign = w & 0x80808080u;
  lo = bf16x2_sub(__byte_perm(low7, 0x43434343u, 0x4140), __byte_perm(sign, 0x43434343u, 0x4140));
  hi = bf16x2_sub(__byte_perm(low7, 0x43434343u, 0x4342), __byte_perm(sign, 0x43434343u, 0x4342));
}

// Two E4M3 (the low and high byte of a 16-bit half word) as fp16x2: exact (E4M3 ⊂ fp16).
__device__ __forceinline__ uint32_t e4m3x2_to_f16(uint32_t two) {
  const __half2_raw h =
      __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two & 0xffffu), __NV_E4M3);
  return static_cast<uint32_t>(h.x) | (static_cast<uint32_t>(h.y) << 16);
}

// Per-row quantization of a (bf16-exact) value with the row's scale, as quantize.cpp does.
__device__ __forceinline__ int quantize_int8(float v, float scale) {
  const int q = __float2int_rn(__fdiv_rn(v, scale));
  return q < -127 ? -127 : (q > 127 ? 127 : q);
}
__device__ __forceinline__ uint8_t quantize_e4m3(float v, float scale) {
  return __nv_cvt_float_to_fp8(__fdiv_rn(v, scale), __NV_SATFINITE, __NV_E4M3);
}

struct NoAux {};

// bf16 weights: a 16-byte vector is 8 k of one row; two m16n8k16 steps per chunk.
struct KindBf16 {
  static constexpr GemvKind kKind = GemvKind::bf16;
  static constexpr int kChunkK = 32, kPerLane = 8, kXBytes = 2;
  using Acc = float;
  using Aux = NoAux;
  __device__ static void load_aux(const GemvParams&, int, bool, int, bool, int, int, Aux&) {}
  template <int NT>
  __device__ static void chunk(const uint4& wa, const uint4& wb, const Aux&, const unsigned char* x,
                               int x_stride, const bool (&xv)[NT], int, float (&acc)[NT][4]) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const uint4 xq = xv[nt] ? load_shared16(x + nt * 8 * x_stride) : make_uint4(0, 0, 0, 0);
      mma_bf16(acc[nt], wa.x, wb.x, wa.y, wb.y, xq.x, xq.y);
      mma_bf16(acc[nt], wa.z, wb.z, wa.w, wb.w, xq.z, xq.w);
    }
  }
  __device__ static float finish(Acc total, float, const GemvParams&, int) {
    return total;
  }
  // Staged x: 8 bf16 in order.
  __device__ static void stage(const float (&v)[8], float, unsigned char* dst) {
    *reinterpret_cast<uint4*>(dst) = make_uint4(pack_bf16(v[0], v[1]), pack_bf16(v[2], v[3]),
                                                pack_bf16(v[4], v[5]), pack_bf16(v[6], v[7]));
  }
  __device__ static void stage_codes(const uint8_t*, unsigned char*) {}
};

// int8 weights, bf16 input (W8A16): 16 k per vector, converted exactly to bf16; the channel
// scale multiplies the finished sum.
struct KindInt8 {
  static constexpr GemvKind kKind = GemvKind::int8;
  static constexpr int kChunkK = 64, kPerLane = 16, kXBytes = 2;
  using Acc = float;
  using Aux = NoAux;
  __device__ static void load_aux(const GemvParams&, int, bool, int, bool, int, int, Aux&) {}
  template <int NT>
  __device__ static void chunk(const uint4& wa, const uint4& wb, const Aux&, const unsigned char* x,
                               int x_stride, const bool (&xv)[NT], int, float (&acc)[NT][4]) {
    uint32_t ag[8], ah[8];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      int8x4_to_bf16(word(wa, i), ag[2 * i], ag[2 * i + 1]);
      int8x4_to_bf16(word(wb, i), ah[2 * i], ah[2 * i + 1]);
    }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const unsigned char* xr = x + nt * 8 * x_stride;
      const uint4 x0 = xv[nt] ? load_shared16(xr) : make_uint4(0, 0, 0, 0);
      const uint4 x1 = xv[nt] ? load_shared16(xr + 16) : make_uint4(0, 0, 0, 0);
      const uint32_t xw[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        mma_bf16(acc[nt], ag[2 * i], ah[2 * i], ag[2 * i + 1], ah[2 * i + 1], xw[2 * i],
                 xw[2 * i + 1]);
      }
    }
  }
  __device__ static float finish(Acc total, float, const GemvParams& p, int row) {
    return total * __ldg(p.w_scales + row);
  }
  __device__ static void stage(const float (&v)[8], float s, unsigned char* dst) {
    KindBf16::stage(v, s, dst);
  }
  __device__ static void stage_codes(const uint8_t*, unsigned char*) {}
};

// int4 GPTQ weights: 32 k per vector, all in one group (groups are multiples of 32). A quad's
// chunk is 128 k; with groups of 64 or 32 it spans 2 or 4 groups, so each mma is issued once
// per group with the other groups' lanes feeding zeros (kSplit = 128 / group size), and each
// group's sum gets its own scale. (q − z) is exact in bf16; the fp16 scale multiplies the
// group's fp32 sum: the reference's values to fp32 rounding order.
template <int kSplit>
struct KindInt4 {
  static constexpr GemvKind kKind = GemvKind::int4;
  static constexpr int kChunkK = 128, kPerLane = 32, kXBytes = 2;
  using Acc = float;
  struct Aux {
    uint32_t zeros;          // z of row g in bits 0-7, of row g + 8 in bits 16-23
    __half2 scales[kSplit];  // (row g, row g + 8) per group of the chunk
  };
  __device__ static void load_aux(const GemvParams& p, int row_g, bool ok_g, int row_h, bool ok_h,
                                  int k_chunk, int t, Aux& aux) {
    const int own = (k_chunk + 32 * t) / p.group_size;
    const int64_t base_g = static_cast<int64_t>(row_g) * p.groups;
    const int64_t base_h = static_cast<int64_t>(row_h) * p.groups;
    const uint32_t zg = ok_g ? __ldg(p.zeros + base_g + own) : 0u;
    const uint32_t zh = ok_h ? __ldg(p.zeros + base_h + own) : 0u;
    aux.zeros = zg | (zh << 16);
#pragma unroll
    for (int j = 0; j < kSplit; ++j) {
      const int group = (k_chunk + 32 * j * (4 / kSplit)) / p.group_size;
      const __half zero = __float2half(0.0f);
      aux.scales[j] = __halves2half2(ok_g ? __ldg(p.group_scales + base_g + group) : zero,
                                     ok_h ? __ldg(p.group_scales + base_h + group) : zero);
    }
  }
  template <int NT>
  __device__ static void chunk(const uint4& wa, const uint4& wb, const Aux& aux,
                               const unsigned char* x, int x_stride, const bool (&xv)[NT], int t,
                               float (&acc)[NT][4]) {
    float part[kSplit][NT][4];
#pragma unroll
    for (int j = 0; j < kSplit; ++j)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) part[j][nt][e] = 0.0f;
    const int mine = t / (4 / kSplit);  // the group (of this chunk's kSplit) this lane holds
    // bf16x2 (128 + z, 128 + z) of rows g and g + 8: 0x4300 | z is the bf16 128 + z.
    const uint32_t zg = (0x4300u | (aux.zeros & 0xffu)) * 0x00010001u;
    const uint32_t zh = (0x4300u | (aux.zeros >> 16)) * 0x00010001u;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      // Nibbles (n, n+4) of the word into one bf16x2 each: 0x4300 | q is the bf16 128 + q.
      uint32_t qg[4], qh[4];
#pragma unroll
      for (int n = 0; n < 4; ++n) {
        qg[n] = bf16x2_sub(((word(wa, i) >> (4 * n)) & 0x000f000fu) | 0x43004300u, zg);
        qh[n] = bf16x2_sub(((word(wb, i) >> (4 * n)) & 0x000f000fu) | 0x43004300u, zh);
      }
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const uint4 xq =
            xv[nt] ? load_shared16(x + nt * 8 * x_stride + 16 * i) : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int j = 0; j < kSplit; ++j) {
          const bool on = kSplit == 1 || mine == j;
          mma_bf16(part[j][nt], on ? qg[0] : 0u, on ? qh[0] : 0u, on ? qg[1] : 0u, on ? qh[1] : 0u,
                   xq.x, xq.y);
          mma_bf16(part[j][nt], on ? qg[2] : 0u, on ? qh[2] : 0u, on ? qg[3] : 0u, on ? qh[3] : 0u,
                   xq.z, xq.w);
        }
      }
    }
#pragma unroll
    for (int j = 0; j < kSplit; ++j)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const float sg = __low2float(aux.scales[j]), sh = __high2float(aux.scales[j]);
        acc[nt][0] = fmaf(sg, part[j][nt][0], acc[nt][0]);
        acc[nt][1] = fmaf(sg, part[j][nt][1], acc[nt][1]);
        acc[nt][2] = fmaf(sh, part[j][nt][2], acc[nt][2]);
        acc[nt][3] = fmaf(sh, part[j][nt][3], acc[nt][3]);
      }
  }
  __device__ static float finish(Acc total, float, const GemvParams&, int) {
    return total;
  }
  // Staged x: each group of 8 as 0,4,1,5,2,6,3,7 (the nibble pairs above).
  __device__ static void stage(const float (&v)[8], float, unsigned char* dst) {
    *reinterpret_cast<uint4*>(dst) = make_uint4(pack_bf16(v[0], v[4]), pack_bf16(v[1], v[5]),
                                                pack_bf16(v[2], v[6]), pack_bf16(v[3], v[7]));
  }
  __device__ static void stage_codes(const uint8_t*, unsigned char*) {}
};

// fp8 E4M3 weights and input: both converted exactly to fp16, fp16 mma with fp32 accumulation
// (the products of two E4M3 values are exact there); the channel and row scales multiply the
// finished sum.
struct KindFp8 {
  static constexpr GemvKind kKind = GemvKind::fp8;
  static constexpr int kChunkK = 64, kPerLane = 16, kXBytes = 2;
  using Acc = float;
  using Aux = NoAux;
  __device__ static void load_aux(const GemvParams&, int, bool, int, bool, int, int, Aux&) {}
  template <int NT>
  __device__ static void chunk(const uint4& wa, const uint4& wb, const Aux&, const unsigned char* x,
                               int x_stride, const bool (&xv)[NT], int, float (&acc)[NT][4]) {
    uint32_t ag[8], ah[8];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      ag[2 * i] = e4m3x2_to_f16(word(wa, i));
      ag[2 * i + 1] = e4m3x2_to_f16(word(wa, i) >> 16);
      ah[2 * i] = e4m3x2_to_f16(word(wb, i));
      ah[2 * i + 1] = e4m3x2_to_f16(word(wb, i) >> 16);
    }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const unsigned char* xr = x + nt * 8 * x_stride;
      const uint4 x0 = xv[nt] ? load_shared16(xr) : make_uint4(0, 0, 0, 0);
      const uint4 x1 = xv[nt] ? load_shared16(xr + 16) : make_uint4(0, 0, 0, 0);
      const uint32_t xw[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        mma_f16(acc[nt], ag[2 * i], ah[2 * i], ag[2 * i + 1], ah[2 * i + 1], xw[2 * i],
                xw[2 * i + 1]);
      }
    }
  }
  __device__ static float finish(Acc total, float row_scale, const GemvParams& p, int row) {
    return total * row_scale * __ldg(p.w_scales + row);
  }
  __device__ static void stage(const float (&v)[8], float scale, unsigned char* dst) {
    uint32_t h[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t two = quantize_e4m3(v[2 * j], scale) |
                           (static_cast<uint32_t>(quantize_e4m3(v[2 * j + 1], scale)) << 8);
      h[j] = e4m3x2_to_f16(two);
    }
    *reinterpret_cast<uint4*>(dst) = make_uint4(h[0], h[1], h[2], h[3]);
  }
  __device__ static void stage_codes(const uint8_t* codes, unsigned char* dst) {
    const uint2 c = *reinterpret_cast<const uint2*>(codes);
    *reinterpret_cast<uint4*>(dst) = make_uint4(e4m3x2_to_f16(c.x), e4m3x2_to_f16(c.x >> 16),
                                                e4m3x2_to_f16(c.y), e4m3x2_to_f16(c.y >> 16));
  }
};

// int8 weights and int8 input (W8A8): m16n8k32 integer mma, exact int32 sums; the row and
// channel scales multiply the finished sum.
struct KindW8a8 {
  static constexpr GemvKind kKind = GemvKind::w8a8;
  static constexpr int kChunkK = 64, kPerLane = 16, kXBytes = 1;
  using Acc = int;
  using Aux = NoAux;
  __device__ static void load_aux(const GemvParams&, int, bool, int, bool, int, int, Aux&) {}
  template <int NT>
  __device__ static void chunk(const uint4& wa, const uint4& wb, const Aux&, const unsigned char* x,
                               int x_stride, const bool (&xv)[NT], int, int (&acc)[NT][4]) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const uint4 xq = xv[nt] ? load_shared16(x + nt * 8 * x_stride) : make_uint4(0, 0, 0, 0);
      mma_s8(acc[nt], wa.x, wb.x, wa.y, wb.y, xq.x, xq.y);
      mma_s8(acc[nt], wa.z, wb.z, wa.w, wb.w, xq.z, xq.w);
    }
  }
  __device__ static float finish(Acc total, float row_scale, const GemvParams& p, int row) {
    return static_cast<float>(total) * row_scale * __ldg(p.w_scales + row);
  }
  __device__ static void stage(const float (&v)[8], float scale, unsigned char* dst) {
    uint32_t w[2] = {0, 0};
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      w[j / 4] |= (static_cast<uint32_t>(quantize_int8(v[j], scale)) & 0xffu) << (8 * (j % 4));
    }
    *reinterpret_cast<uint2*>(dst) = make_uint2(w[0], w[1]);
  }
  __device__ static void stage_codes(const uint8_t* codes, unsigned char* dst) {
    *reinterpret_cast<uint2*>(dst) = *reinterpret_cast<const uint2*>(codes);
  }
};

}  // namespace inferlab::engine::cuda::gemv
