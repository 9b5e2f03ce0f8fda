#pragma once
// The persistent decode kernel's weight stages (decode_layers_hopper.cu): which rows a block
// owns, the producer warps that stream them into the ring, the consumer warps' tensor-core
// product, and the stages' inputs (RMSNorm or a copy) and outputs (store, residual add, SiLU ×
// up). Device code for sm_90a only. C++17.
#include <cuda_bf16.h>

#include <cstdint>

#include "engine/cuda/attention_device.cuh"
#include "engine/cuda/decode_layers_common.cuh"
#include "engine/cuda/gemv_rows.cuh"

namespace inferlab::engine::cuda::persistent_decode {

#ifdef INFERLAB_HOPPER_DEVICE_CODE
// Rows [first, first + rows) of a row-major matrix of row_bytes a row; acc_offset: where the
// rows' accumulators start among the stage's.
struct Segment {
  const unsigned char* base;
  int row_bytes, first, rows, acc_offset;
};

__device__ __forceinline__ int split_first(int n, int block, int grid) {
  return static_cast<int>(static_cast<int64_t>(n) * block / grid);
}

__device__ int segments_of(const PersistentDecodeShape& s, const PersistentDecodeLayer& w,
                           Stage stage, Segment (&seg)[2]) {
  const int b = blockIdx.x, g = gridDim.x;
  const int q_dim = s.num_heads * s.head_dim, kv_dim = s.num_kv_heads * s.head_dim;
  auto rows_of = [&](const bf16* m, int in, int n, int offset) {
    const int first = split_first(n, b, g);
    return Segment{reinterpret_cast<const unsigned char*>(m), 2 * in, offset + first,
                   split_first(n, b + 1, g) - first, 0};
  };
  switch (stage) {
    case kQkv:
      seg[0] = rows_of(w.qkv, s.hidden, q_dim + 2 * kv_dim, 0);
      return 1;
    case kO:
      seg[0] = rows_of(w.o_proj, q_dim, s.hidden, 0);
      return 1;
    case kGateUp:
      seg[0] = rows_of(w.gate_up, s.hidden, s.intermediate, 0);
      seg[1] = rows_of(w.gate_up, s.hidden, s.intermediate, s.intermediate);
      seg[1].acc_offset = seg[0].rows;
      return 2;
    case kDown:
      seg[0] = rows_of(w.down, s.intermediate, s.hidden, 0);
      return 1;
  }
  return 0;
}

// A segment's tiles, row group major: tile j is rows [16 (j / blocks), +16) by columns
// [512 (j % blocks), +512), blocks = the row's 1 KB chunks.
__device__ __forceinline__ int tiles_of(const Segment& seg) {
  return ceil_div(seg.rows, kTileRows) * (seg.row_bytes / kChunkBytes);
}

__device__ __forceinline__ void copy16(uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}

// One arrival on `bar` once this thread's cp.async copies so far have landed.
__device__ __forceinline__ void arrive_when_copied(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

// The producer warps: every tile of every stage of every layer, in the consumers' order. Each
// thread copies 8 of a tile's 1,024 16-byte pieces (cp.async: a tile's 16 rows are 16 separate
// kilobytes of the matrix, which bulk copies, one per row from one thread, issued at ~20 KB a µs
// a block), then arrives on the tile's barrier when they have landed (128 arrivals a phase).
__device__ void produce(const Args& a, unsigned char* smem) {
  constexpr int kPieces = kChunkBytes / 16;       // per row of a tile
  const int producer = threadIdx.x - kConsumers;  // 0 .. kProducers - 1
  const uint32_t full = smem_u32(smem + a.l.bars), empty = full + 8 * kMaxSlots;
  const uint32_t ring = smem_u32(smem + a.l.ring);
  volatile int* issued = reinterpret_cast<volatile int*>(smem + a.l.misc) + 48;
  int slot = 0, tile = 0;
  uint32_t phase = 0;
  for (int layer = 0; layer < a.p.shape.layers; ++layer) {
    const PersistentDecodeLayer w = a.p.layers[layer];
    for (Stage stage : {kQkv, kO, kGateUp, kDown}) {
      Segment seg[2];
      const int n = segments_of(a.p.shape, w, stage, seg);
      for (int i = 0; i < n; ++i) {
        const int blocks = seg[i].row_bytes / kChunkBytes, count = tiles_of(seg[i]);
        for (int j = 0; j < count; ++j) {
          const int row0 = kTileRows * (j / blocks), rows = min(kTileRows, seg[i].rows - row0);
          const unsigned char* src = seg[i].base +
                                     static_cast<int64_t>(seg[i].first + row0) * seg[i].row_bytes +
                                     (j % blocks) * kChunkBytes;
          wait_phase(empty + 8 * slot, phase ^ 1);  // a fresh barrier passes parity 1
          const uint32_t dst = ring + slot * kSlotBytes;
          for (int piece = producer; piece < rows * kPieces; piece += kProducers) {
            const int r = piece / kPieces, at = 16 * (piece % kPieces);
            copy16(dst + r * kRowPitch + at, src + static_cast<int64_t>(r) * seg[i].row_bytes + at);
          }
          arrive_when_copied(full + 8 * slot);
          ++tile;
          if (producer == 0) *issued = tile;  // this slot's earlier phases are all complete
          if (++slot == a.l.slots) {
            slot = 0;
            phase ^= 1;
          }
        }
      }
    }
  }
}

// The attention kernels' tensor-core pieces: D (16×8 fp32) += A (16×16 bf16) · B (16×8 bf16),
// and ldmatrix's four 8×8 bf16 matrices.
using detail::ldmatrix_x4;
using detail::mma_bf16;

// Until the producer has issued tile `tile`. A parity wait is only unambiguous one phase ahead:
// the warp owning tile t may get there before tile t − slots (another warp's) has even landed,
// when the slot's barrier is two phases behind and a wait on t's parity would pass at once.
__device__ __forceinline__ void wait_issued(const unsigned char* smem, const Layout& l, int tile) {
  const volatile int* issued = reinterpret_cast<const volatile int*>(smem + l.misc) + 48;
  if (*issued > tile) return;
  const long long start = clock64();
  while (*issued <= tile) {
    if (clock64() - start > kTimeoutCycles) __trap();
  }
}

// The stage's rows against the staged input, on the tensor cores. Tile t (the t-th slot the
// producer fills, counted over the whole kernel in `tiles`) belongs to warp t % 8: 32 mma
// k-steps of its 16 rows against the input (B holds the input in all eight columns, so every
// column of the product is the row's sum), two accumulators in turn, and the rows' sums added
// into the warp's accumulators in shared memory: per 16 weights of a row a lane issues an eighth
// of an mma where CUDA-core FMAs issued sixteen FMAs and two conversions.
__device__ void multiply(const Args& a, unsigned char* smem, const Segment* seg, int segments,
                         int& tiles) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int group = lane / 4, quad = lane % 4;
  const uint32_t full = smem_u32(smem + a.l.bars), empty = full + 8 * kMaxSlots;
  float* acc = reinterpret_cast<float*>(smem + a.l.acc) + warp * a.l.max_rows;
  const bf16* xs = reinterpret_cast<const bf16*>(smem + a.l.work);
  // ldmatrix.x4: lane l gives row (l / 8 % 2) · 8 + l % 8, columns (l / 16) · 8 of the k-step.
  const int ld_row = (lane / 8 % 2) * 8 + lane % 8, ld_col = (lane / 16) * 8;
  for (int i = 0; i < segments; ++i) {
    const int blocks = seg[i].row_bytes / kChunkBytes, count = tiles_of(seg[i]);
    for (int j = (warp - tiles % kConsumerWarps + kConsumerWarps) % kConsumerWarps; j < count;
         j += kConsumerWarps) {
      const int tile = tiles + j, slot = tile % a.l.slots;
      const int row0 = kTileRows * (j / blocks), rows = min(kTileRows, seg[i].rows - row0);
      const bf16* x = xs + (j % blocks) * kTileCols;
      wait_issued(smem, a.l, tile);
      wait_phase(full + 8 * slot, static_cast<uint32_t>(tile / a.l.slots) & 1u);
      const unsigned char* data =
          smem + a.l.ring + slot * kSlotBytes + ld_row * kRowPitch + ld_col * 2;
      float d[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll 8
      for (int k = 0; k < kTileCols / 16; ++k) {
        uint32_t frag[4];
        ldmatrix_x4(frag, data + k * 32);
        const uint32_t b0 = *reinterpret_cast<const uint32_t*>(x + 16 * k + 2 * quad);
        const uint32_t b1 = *reinterpret_cast<const uint32_t*>(x + 16 * k + 2 * quad + 8);
        mma_bf16(d[k & 1], frag, b0, b1);
      }
      __syncwarp();
      if (lane == 0) mbar_arrive(empty + 8 * slot);  // the tile is in registers now
      if (quad == 0) {                               // column 0: rows group and group + 8
        if (group < rows) acc[seg[i].acc_offset + row0 + group] += d[0][0] + d[1][0];
        if (group + 8 < rows) acc[seg[i].acc_offset + row0 + group + 8] += d[0][2] + d[1][2];
      }
    }
    tiles += count;
  }
  consumer_sync();
}

// Row r's sum over the warps' accumulators, in warp order.
__device__ __forceinline__ float row_total(const Args& a, const unsigned char* smem, int r) {
  const float* acc = reinterpret_cast<const float*>(smem + a.l.acc);
  float v = 0.0f;
#pragma unroll
  for (int w = 0; w < kConsumerWarps; ++w) v += acc[w * a.l.max_rows + r];
  return v;
}

__device__ void zero_accumulators(const Args& a, unsigned char* smem) {
  float* acc = reinterpret_cast<float*>(smem + a.l.acc);
  for (int i = threadIdx.x; i < kConsumerWarps * a.l.max_rows; i += kConsumers) acc[i] = 0.0f;
}

// The staged input: HF's RMSNorm of x (bf16(w · bf16(x · inv_rms))), accumulators zeroed. x is
// read from L2 once, into registers (hidden ≤ kMaxNormWidth).
__device__ void stage_norm(const Args& a, unsigned char* smem, const bf16* x, const bf16* weight) {
  constexpr int kVectors = kMaxNormWidth / 8 / kConsumers;
  const int n = a.p.shape.hidden, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* misc = reinterpret_cast<float*>(smem + a.l.misc);
  bf16* xs = reinterpret_cast<bf16*>(smem + a.l.work);
  zero_accumulators(a, smem);
  uint4 held[kVectors];
#pragma unroll
  for (int v = 0; v < kVectors; ++v) {
    const int i = threadIdx.x + v * kConsumers;
    held[v] = i < n / 8 ? __ldcg(reinterpret_cast<const uint4*>(x) + i) : make_uint4(0, 0, 0, 0);
  }
  float sum = 0.0f;
#pragma unroll
  for (int v = 0; v < kVectors; ++v) {
    float f[8];
    gemv::unpack_bf16(held[v], f);
#pragma unroll
    for (int j = 0; j < 8; ++j) sum = fmaf(f[j], f[j], sum);
  }
  sum = gemv::warp_sum(sum);
  if (lane == 0) misc[warp] = sum;
  consumer_sync();
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < kConsumerWarps; ++w) total += misc[w];
  const float inv_rms = rsqrtf(total / static_cast<float>(n) + a.p.eps);
#pragma unroll
  for (int v = 0; v < kVectors; ++v) {
    const int i = threadIdx.x + v * kConsumers;
    if (i >= n / 8) break;
    float f[8], g[8];
    gemv::unpack_bf16(held[v], f);
    gemv::unpack_bf16(__ldg(reinterpret_cast<const uint4*>(weight) + i), g);
    uint32_t out[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const __nv_bfloat162 pair =
          __floats2bfloat162_rn(g[2 * j] * gemv::round_bf16(f[2 * j] * inv_rms),
                                g[2 * j + 1] * gemv::round_bf16(f[2 * j + 1] * inv_rms));
      out[j] = *reinterpret_cast<const uint32_t*>(&pair);
    }
    *reinterpret_cast<uint4*>(xs + 8 * i) = make_uint4(out[0], out[1], out[2], out[3]);
  }
  consumer_sync();
}

// The staged input: n elements of x as they are, accumulators zeroed.
__device__ void stage_copy(const Args& a, unsigned char* smem, const bf16* x, int n) {
  bf16* xs = reinterpret_cast<bf16*>(smem + a.l.work);
  zero_accumulators(a, smem);
  for (int i = threadIdx.x; i < n / 8; i += kConsumers) {
    reinterpret_cast<uint4*>(xs)[i] = __ldcg(reinterpret_cast<const uint4*>(x) + i);
  }
  consumer_sync();
}

// Rows of the stage's segment 0 into y (store) or added into the residual stream.
__device__ void finish_rows(const Args& a, const unsigned char* smem, const Segment& seg, bf16* y,
                            bool residual_add) {
  for (int r = threadIdx.x; r < seg.rows; r += kConsumers) {
    const float v = row_total(a, smem, r);
    bf16* out = y + seg.first + r;
    *out = residual_add ? __float2bfloat16(__bfloat162float(__ldcg(out)) + gemv::round_bf16(v))
                        : __float2bfloat16(v);
  }
}

// gate and up of the block's features → bf16(bf16(silu(bf16(gate))) · bf16(up)).
__device__ void finish_swiglu(const Args& a, const unsigned char* smem, const Segment& gate) {
  for (int f = threadIdx.x; f < gate.rows; f += kConsumers) {
    const float g = gemv::round_bf16(row_total(a, smem, f));
    const float u = gemv::round_bf16(row_total(a, smem, gate.rows + f));
    const float silu = gemv::round_bf16(g / (1.0f + expf(-g)));
    a.p.act[gate.first + f] = __float2bfloat16(silu * u);
  }
}
#endif  // INFERLAB_HOPPER_DEVICE_CODE

}  // namespace inferlab::engine::cuda::persistent_decode
