#pragma once
// The streaming GEMV's shared definitions (gemv_stream.cu, gemv_stream_stage.cuh): its shape,
// weight formats, kernel parameters and the layout of the staged input in shared memory.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "model/engine_gemv_rows.hpp"

namespace inferlab::engine::cuda::gemv_stream_detail {

using bf16 = __nv_bfloat16;

constexpr int kThreads = 256, kWarps = kThreads / 32;
constexpr int kStageBytes = static_cast<int>(kEngineGemvStreamStageBytes);  // staged rows, at most
constexpr int kHeadFloats = 2 * 32 + 2 + 2 * kWarps + 2;  // warp sums, inv rms, maxima, factors

enum class Fmt { bf16, int8, int4, fp8, w8a8 };
enum Epi { kStore = 0, kResidual = 1, kSwiglu = 2, kRope = 3 };

struct Params {
  const uint8_t* w;
  int64_t row_bytes;
  int in, out_rows, features, tasks;
  const float* scales;
  const __half* group_scales;
  const uint8_t* zeros;
  int group_size, groups;
  int vectors_per_group_log2;  // int4: log2(group_size / 32) when a power of two, else -1
  const bf16* x;
  int rows;
  const bf16* norm_weight;
  float eps;
  const bf16* bias;
  void* y;
  bool y_fp32;
  bf16* residual;
  // kRope: task t is the pair (i, i + d/2) of head t / (d/2), i = t % (d/2); positions, slots
  // and inv_freq as rope_kv_write reads them, the caches [slot][kv_head][d].
  int heads, kv_heads, head_dim;
  const int32_t* positions;
  const int32_t* slots;
  const float* inv_freq;
  bf16* k_cache;
  bf16* v_cache;
  bool programmatic;  // launched with programmatic dependent launch (host side only)
  bool allow_early;   // allow the next kernel's launch once the input is ready, not at the end
};

template <Fmt F>
struct Traits;
template <>
struct Traits<Fmt::bf16> {
  static constexpr int kElems = 8, kXBytes = 2;  // weights per vector, staged bytes per input
  static constexpr float kCodeMax = 0;           // no input scale
};
template <>
struct Traits<Fmt::int8> {
  static constexpr int kElems = 16, kXBytes = 2;
  static constexpr float kCodeMax = 240;  // |w·x'| ≤ 128·240: two products sum under 65504
};
template <>
struct Traits<Fmt::int4> {
  static constexpr int kElems = 32, kXBytes = 2;  // two byte planes, and Int4Block per vector
  static constexpr float kCodeMax = 0;            // scaled per block (stage_int4)
};
template <>
struct Traits<Fmt::fp8> {
  static constexpr int kElems = 16, kXBytes = 2;
  static constexpr float kCodeMax = 448;
};
template <>
struct Traits<Fmt::w8a8> {
  static constexpr int kElems = 16, kXBytes = 1;
  static constexpr float kCodeMax = 127;
};

// 16-byte vectors of a row each lane loads a stage: four, and two for fp8: half the registers the
// loads hold (kMinBlocks: three or four blocks an SM), more warps with fewer bytes each. Llama 3
// 8B's fp8 decode step 2.957 -> 2.878 ms on the H200 (int4 2.444 -> 2.486, bf16 4.278 -> 4.415 ms
// kept four; MEASUREMENTS §56, call 3).
template <Fmt F>
constexpr int kLaneVectors = F == Fmt::fp8 ? 2 : 4;

// The kernel's launch bounds, blocks of kThreads an SM: two at four vectors a lane (at most 128
// registers); at two, four for one input row (at most 64 registers, which fp8 takes without
// spilling: the full-stage path of §57 took it to 69-72 under a bound of three, one block an SM
// fewer) and three for two (at most 80).
template <Fmt F, int B>
constexpr int kMinBlocks = kLaneVectors<F> == 4 ? 2
                           : B == 1             ? 4
                                                : 3;
// Per epilogue: fp8's one-row RoPE epilogue (kRope, gemv_stream.cu) at three, 80 registers; at
// four it spilled 36 bytes, and Llama 3 8B's fp8 step ran 2.862 ms against 2.828 at three
// (MEASUREMENTS §58).
template <Fmt F, int B, int E>
constexpr int kMinBlocksFor = (E == kRope && F == Fmt::fp8 && B == 1) ? 3 : kMinBlocks<F, B>;

// Per 32-element block of int4's staged input: what turns a vector's integer sum into the
// row's units (2^(e − e_row), the row's 2^e_row applied at the end) and Σx' for the zero's term.
struct Int4Block {
  float relative_scale;
  int sum;
};

// Bytes of one staged input row: int4's byte planes are followed by its blocks, the next row's
// planes 16-byte aligned again.
template <Fmt F>
__host__ __device__ constexpr int64_t staged_row_bytes(int64_t in) {
  const int64_t planes = in * Traits<F>::kXBytes;
  if (F != Fmt::int4) return planes;
  return (planes + in / 32 * static_cast<int64_t>(sizeof(Int4Block)) + 15) / 16 * 16;
}

// Bytes of the staged rows.
template <Fmt F>
__host__ __device__ constexpr int64_t staged_bytes(int64_t rows, int64_t in) {
  return (rows * staged_row_bytes<F>(in) + 15) / 16 * 16;
}

// Byte offset of the 16 bytes of staged input for elements [k, k + 8) within a row. A weight
// vector's input spans kPieces 16-byte pieces; they are stored piece-major (piece i of every
// vector, then piece i + 1), so the 32 lanes of a warp, which own consecutive vectors, read
// consecutive 16-byte pieces: no bank conflicts (vector-major, lanes 32 or 64 bytes apart
// made each 16-byte load 8 or 16 wavefronts). W8A8's 8 codes are 8 bytes: vector-major.
template <Fmt F>
__device__ __forceinline__ int64_t staged_offset(int k, int in) {
  constexpr int kPieces = Traits<F>::kElems * Traits<F>::kXBytes / 16;
  if constexpr (kPieces <= 1) {
    return static_cast<int64_t>(k) * Traits<F>::kXBytes;
  } else {
    const int vectors = in / Traits<F>::kElems, v = k / Traits<F>::kElems;
    const int piece = (k % Traits<F>::kElems) / 8;
    return (static_cast<int64_t>(piece) * vectors + v) * 16;
  }
}

}  // namespace inferlab::engine::cuda::gemv_stream_detail
