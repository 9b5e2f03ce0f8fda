#pragma once
// Device helpers shared by the attention kernels (attention_decode.cu, attention_prefill.cu,
// attention_naive.cu): the KV cache formats and their conversion to fp32, cp.async, and
// programmatic dependent launch. Internal to the CUDA backend; C++17.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/programmatic_launch.cuh"
#include "util/dtype.hpp"

namespace inferlab::engine::cuda::detail {

// log2(e): the kernels keep scores in the log2 domain and take exp2f.
constexpr float kLog2e = 1.4426950408889634f;

// Threads per row in the kernels whose threads hold 8 elements of a row each (the chunked decode,
// the naive path): D / 8 rounded up to a power of two, so that shuffles at halving offsets sum a
// row. Exactly D / 8 at head_dim 64, 128 and 256; at 192, 32 lanes of which 24 hold elements
// (row_lane_active) and the other 8 hold zeros.
template <int D>
constexpr int row_lanes() {
  int lanes = 1;
  while (lanes < D / 8) lanes *= 2;
  return lanes;
}
// Whether lane `part` of a row holds elements (always, where row_lanes<D>() is D / 8).
template <int D>
__device__ __forceinline__ bool row_lane_active(int part) {
  return row_lanes<D>() == D / 8 || part < D / 8;
}

// One cache format: its element size, and eight consecutive elements as the raw word that holds
// them (16 bytes of bf16, 8 bytes of int8 or E4M3) converted to fp32 *without* the vector's scale
// (the kernels apply the per-(slot, head) scale to a dot product or a softmax weight, once per
// row instead of once per element). int8 and E4M3 values are exact in fp32 and in bf16.
template <DType F>
struct KvFormat;

template <>
struct KvFormat<DType::bf16> {
  static constexpr bool kQuantized = false;
  static constexpr int kBytes = 2;
  using Raw8 = uint4;
  // bf16 is the top half of an fp32 (element 2i in the low half of word i). Plain integer
  // operations on the words, so that the compiler keeps the 16-byte load whole.
  __device__ static __forceinline__ void to_float(const Raw8& raw, float (&out)[8]) {
    const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      out[2 * i] = __uint_as_float(words[i] << 16);
      out[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
    }
  }
};

// int8 → fp32 without the (quarter-rate) I2F: the byte biased by 128 becomes the low mantissa of
// 2^23, and subtracting 2^23 + 128 leaves q exactly.
__device__ __forceinline__ void int8x4_to_float(uint32_t word, float* out) {
  const uint32_t biased = word ^ 0x80808080u;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    // Bytes of the result: biased byte j, 0x00, 0x00, 0x4B (2^23 = 0x4B000000).
    const uint32_t bits = __byte_perm(biased, 0x4B000000u, 0x7540u + static_cast<uint32_t>(j));
    out[j] = __uint_as_float(bits) - 8388736.0f;
  }
}

template <>
struct KvFormat<DType::int8> {
  static constexpr bool kQuantized = true;
  static constexpr int kBytes = 1;
  using Raw8 = uint2;
  __device__ static __forceinline__ void to_float(const Raw8& raw, float (&out)[8]) {
    int8x4_to_float(raw.x, out);
    int8x4_to_float(raw.y, out + 4);
  }
};

// E4M3 → fp16 is exact (the hardware cvt on sm_89 and later), fp16 → fp32 too.
__device__ __forceinline__ void e4m3x4_to_float(uint32_t word, float* out) {
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const auto pair = static_cast<__nv_fp8x2_storage_t>(word >> (16 * j));
    const __half2 h(__nv_cvt_fp8x2_to_halfraw2(pair, __NV_E4M3));
    const float2 f = __half22float2(h);
    out[2 * j] = f.x;
    out[2 * j + 1] = f.y;
  }
}

template <>
struct KvFormat<DType::fp8> {
  static constexpr bool kQuantized = true;
  static constexpr int kBytes = 1;
  using Raw8 = uint2;
  __device__ static __forceinline__ void to_float(const Raw8& raw, float (&out)[8]) {
    e4m3x4_to_float(raw.x, out);
    e4m3x4_to_float(raw.y, out + 4);
  }
};

// Eight elements of a row through the read-only path (global memory).
template <DType F>
__device__ __forceinline__ typename KvFormat<F>::Raw8 load_raw8(const void* p) {
  return __ldg(static_cast<const typename KvFormat<F>::Raw8*>(p));
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Eight elements of a row from shared memory in one vector load (16 bytes of bf16, 8 of
// int8/fp8). Written out because the compiler otherwise splits the load along the way the
// elements are used (16-bit or 32-bit pieces). The memory clobber keeps it between the
// barriers where it stands.
__device__ __forceinline__ void load_shared(uint4& raw, const void* p) {
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(raw.x), "=r"(raw.y), "=r"(raw.z), "=r"(raw.w)
               : "r"(smem_addr(p))
               : "memory");
}
__device__ __forceinline__ void load_shared(uint2& raw, const void* p) {
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n"
               : "=r"(raw.x), "=r"(raw.y)
               : "r"(smem_addr(p))
               : "memory");
}

// Tensor-core pieces of the prefill (attention_prefill.cu) and large-batch decode
// (attention_decode_stream.cu) kernels.
// D (16×8, fp32) += A (16×16 bf16, row-major fragment) · B (16×8 bf16, column fragment).
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four 8×8 bf16 matrices: A fragments of Q, B fragments of Kᵀ.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p))
               : "memory");
}

// Four 8×8 bf16 matrices, transposed on the way: the B fragments of P·V straight from the
// row-major value tile.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p))
               : "memory");
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x (low half) = lo
  return *reinterpret_cast<const uint32_t*>(&v);
}

// 16 bytes global → shared, bypassing L1; src_bytes 0 fills zeros without reading.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)),
               "l"(__cvta_generic_to_global(src)), "r"(src_bytes)
               : "memory");
}
// 4 bytes global → shared (a scale); src_bytes 0 fills zeros.
__device__ __forceinline__ void cp_async4(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)),
               "l"(__cvta_generic_to_global(src)), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
// Waits until at most `pending` of this thread's committed groups are still in flight.
template <int pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
}

// Programmatic dependent launch: engine/cuda/programmatic_launch.cuh. Every decode kernel
// waits for the previous grid first thing, so the chain of dependencies stays transitive.

}  // namespace inferlab::engine::cuda::detail
