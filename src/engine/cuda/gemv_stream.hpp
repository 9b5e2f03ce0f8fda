#pragma once
// The streaming GEMV: one or two input rows (decode at batch 1-2) against a weight matrix in any
// format, written for bytes in flight rather than for arithmetic. Measured on the H200
// (docs/MEASUREMENTS.md §21), the tensor-core GEMV (gemv_kernel.cuh) reached 1.9-2.2 TB/s at
// one row with a quarter of the SM's warp slots filled, where HBM gives ~4.3: at one or two
// rows the mma's reuse buys nothing and the kernel waits on its loads.
//
// Shape: a persistent grid (as many blocks as fit, every SM busy), 8 warps a block; a warp owns
// two weight rows at a time (two output features, the gate and up rows of one SwiGLU output, or
// the pair of rows RoPE rotates together)
// and its lanes stride along them in 16-byte vectors, 4 vectors of each row in flight and the
// next 4 issued before the current ones are used: 2 × 4 × 16 B × 2 stages per lane, ~64 KB a
// block, more than the ~25 KB per SM that Little's law asks at 4.8 TB/s (fp8: 2 vectors, in
// fewer registers, so three or four blocks an SM where the staged input fits; measured faster,
// gemv_stream_common.cuh's kLaneVectors. The launcher reads the resident blocks once per
// instantiation, at its first call's staged bytes: a wider input of the same instantiation that
// fits fewer blocks,
// Llama 3 70B's fp8 down projection, gets a grid for more, which costs a second partial wave, not
// correctness; not yet measured). A ring of shared memory filled by cp.async in place of the
// registers, three stages a warp, ran slower for every format (MEASUREMENTS §56). The block first
// stages its input rows in shared memory once (RMSNorm applied and/or quantized per row there, int4
// scaled per 32-element block: the norm's bits are the unfused kernels', gemv_rows.cuh), then
// loops over its rows of the matrix.
//
// Arithmetic per 16-byte weight vector, each cheap enough to stay under the issue rate at HBM
// speed: bf16 (8 weights) fp32 FMAs; int8 weight-only converted to exact fp16 integers by the
// 0x6400 magic, fp16 multiply-adds (2 products a half lane) then fp32; int4 weight-only as bytes
// against the input's two byte planes, dp4a, exact int32 per vector (the zero's term from the
// staged Σx); fp8 (E4M3 weights × E4M3-coded input, both exact in fp16) fp16 multiply-adds (8
// products a half lane) then fp32; W8A8 dp4a on the int8 codes. The per-channel, per-group and
// per-row scales apply in fp32.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/projection.hpp"

namespace inferlab::engine::cuda {

// Rows the streaming GEMV takes at most.
constexpr int64_t kGemvStreamMaxRows = 2;

// Programmatic dependent launch (programmatic_launch.cuh): off; early: each block lets the next
// kernel be scheduled as soon as its input is ready (the next kernel's first weight loads overlap
// this one's work, its blocks placed wherever slots free up); late: once the block's work is
// done (the next kernel's launch and first loads overlap this one's tail only).
enum class GemvStreamPdl { off, early, late };

struct GemvStreamCall {
  const DeviceMatrix* w = nullptr;
  int rows = 1;
  const __nv_bfloat16* x = nullptr;            // [rows][in]
  const __nv_bfloat16* norm_weight = nullptr;  // set: x is the residual stream, normalised here
  float eps = 0;
  GemvFused::Epilogue epilogue = GemvFused::Epilogue::store;
  const __nv_bfloat16* bias = nullptr;  // [out] (SwiGLU: [2I], before the first rounding)
  void* y = nullptr;                    // store: [rows][out] bf16 or fp32; SwiGLU: [rows][out/2]
  bool y_fp32 = false;
  __nv_bfloat16* residual = nullptr;  // residual_add: [rows][out], in place
  GemvFused::Rope rope;               // rope_kv_write: y as store, then RoPE and the cache write
  GemvStreamPdl pdl = GemvStreamPdl::off;
};

// Whether the rope_kv_write epilogue fits `w`: the fused QKV matrix of (heads + 2 KV heads) x an
// even head_dim rows, at least one head of each. The launcher and the Projector both check it.
bool gemv_stream_rope_fits(const DeviceMatrix& w, const GemvFused::Rope& rope);

// The measured choice per weight format (docs/MEASUREMENTS.md §45).
GemvStreamPdl gemv_stream_default_pdl(const DeviceMatrix& w);

// Whether the streaming GEMV runs `rows` rows of `w` (formats and widths it has kernels for,
// the staged input within its shared-memory budget).
bool gemv_stream_supported(int64_t rows, const DeviceMatrix& w);

// Launches on `stream`; no allocation, no synchronisation (graph-capturable).
void launch_gemv_stream(const GemvStreamCall& call, cudaStream_t stream);

}  // namespace inferlab::engine::cuda
