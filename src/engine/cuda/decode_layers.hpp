#pragma once
// The persistent decode kernel: every layer of a batch-1 decode step in one launch (Hopper).
//
// Why. Kernel by kernel, a Llama 3.2 1B decode step launches ~100 kernels whose weights are
// 2-67 MB each; every one pays its launch, its ramp to full bandwidth and its tail, and the
// small ones (QKV 12.6 MB, O 8.4 MB) run at a quarter of HBM's rate (MEASUREMENTS §45-§46).
// Here one grid of one block per SM stays resident for all layers, and each block's producer
// warps stream the block's share of every weight matrix, in the order the layers use them, into
// a ring of shared-memory slots (cp.async, completing on mbarriers). Weights do not depend on
// the activations, so the producers run ahead of the math by the ring's ~180-200 KB a block,
// through the grid barriers and the attention in between.
//
// Measured (H200, MEASUREMENTS §53): correct against the CPU reference and the kernel path, but
// slower than the kernel path: Llama 3.2 1B at batch 1, context 1024, 1.016-1.021 ms against
// 0.969-0.971, Llama 3 8B 4.69-4.70 against 4.33-4.35. Its per-stage trace (..._DECODE_TRACE)
// says why: the weight stages stream at the block's share of HBM, but five grid barriers a layer
// take ~2-5 µs each under the stream's load and the attention stage ~7-11 µs: 25-37 µs a layer
// beyond streaming, where the ring holds ~6 µs of it. So the kernel path stays the default
// (DecodeLayersChoice::automatic), and this one is an A/B switch.
//
// One layer is five stages separated by grid barriers (a counter in global memory):
//   A. every block RMSNorms the residual stream into shared memory (all of it, from L2) and
//      multiplies its rows of the fused QKV matrix: raw q, k, v;
//   B. attention over the paged bf16 cache, split over (KV head, span of positions) items; an
//      item applies RoPE to its queries (and, holding the new position, to the new key, writing
//      key and value to the cache), and the last item of a KV head to finish (a counter) merges
//      the head's partial softmaxes into the attention output;
//   C. its rows of O, added into the residual stream;
//   D. RMSNorm again, its features of gate and up, SiLU × up;
//   E. its rows of down, added into the residual stream.
// Numerics are the kernel path's (HF's bf16 rounding points: norm, projections' outputs, RoPE,
// SiLU, residual adds) with fp32 sums in another order. Scope: one sequence of one token, bf16
// weights and cache, no biases or per-head norms, head_dim 64 or 128, widths multiple of 512,
// at most 8 query heads per KV head; everything else takes the kernel-by-kernel path.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace inferlab::engine::cuda {

// One layer's weights (row-major [out, in], bf16) and cache, as the kernel reads them from a
// device array.
struct PersistentDecodeLayer {
  const __nv_bfloat16* input_norm = nullptr;
  const __nv_bfloat16* post_norm = nullptr;
  const __nv_bfloat16* qkv = nullptr;      // [q_dim + 2 kv_dim, hidden]
  const __nv_bfloat16* o_proj = nullptr;   // [hidden, q_dim]
  const __nv_bfloat16* gate_up = nullptr;  // [2 intermediate, hidden]: gate rows, then up rows
  const __nv_bfloat16* down = nullptr;     // [hidden, intermediate]
  __nv_bfloat16* k_cache = nullptr;        // [slots, kv_dim]
  __nv_bfloat16* v_cache = nullptr;
};

struct PersistentDecodeShape {
  int layers = 0, hidden = 0, intermediate = 0;
  int num_heads = 0, num_kv_heads = 0, head_dim = 0;
  int block_size = 0;  // positions per cache block
};

struct PersistentDecodeParams {
  PersistentDecodeShape shape;
  const PersistentDecodeLayer* layers = nullptr;  // device, [shape.layers]
  float eps = 0, softmax_scale = 0;
  // The one sequence's metadata on the device: its new token's position and cache slot, its
  // block table and its context length (the new token included).
  const int32_t* position = nullptr;
  const int32_t* slot = nullptr;
  const int32_t* block_table = nullptr;
  const int32_t* context_len = nullptr;
  const float* inv_freq = nullptr;    // [head_dim / 2]
  __nv_bfloat16* residual = nullptr;  // [hidden], the embedding in, the last layer's stream out
  __nv_bfloat16* qkv = nullptr;       // scratch [q_dim + 2 kv_dim]
  __nv_bfloat16* attn = nullptr;      // scratch [q_dim]
  __nv_bfloat16* act = nullptr;       // scratch [intermediate]
  float* partials = nullptr;          // persistent_decode_partial_floats
  unsigned* counters = nullptr;       // persistent_decode_counters, zero before the first launch
  int splits = 0;                     // attention items per KV head; 0: one item per SM in all
  // Where each block writes globaltimer stamps (ns), when set: [block][stamps], stamp 0 the
  // block's start, then per layer ten: each stage's end (A-E) and its grid barrier's passing.
  unsigned long long* trace = nullptr;
  int ring_slots = 0;  // weight tiles in flight per block, at most (4 at least); 0: all that fit
};

// Stamps per block of PersistentDecodeParams::trace.
__host__ __device__ inline int persistent_decode_trace_stamps(const PersistentDecodeShape& shape) {
  return 1 + 10 * shape.layers;
}

// Whether the kernel runs `shape` on a device of compute capability `device_cc` (90 for H100
// and H200) with this binary (its sm_90a image loads). Cheap after the first call.
bool persistent_decode_supported(const PersistentDecodeShape& shape, int device_cc);

// Device scratch the kernel needs beside the activations: fp32 attention partials, and the
// counters (the grid barrier's, the exit count, one per KV head), which the kernel leaves at
// zero when it finishes.
size_t persistent_decode_partial_floats(const PersistentDecodeShape& shape);
size_t persistent_decode_counters(const PersistentDecodeShape& shape);

// Launches on `stream` (cooperative: the whole grid resident; graph-capturable, no allocation).
// A barrier or pipeline wait of more than ~4 s traps (a broken kernel fails, it does not hang).
void launch_persistent_decode(const PersistentDecodeParams& params, cudaStream_t stream);

}  // namespace inferlab::engine::cuda
