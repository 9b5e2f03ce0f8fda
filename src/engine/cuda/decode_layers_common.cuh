#pragma once
// The persistent decode kernel's shared parts (decode_layers_hopper.cu and the device pieces it
// includes, decode_layers_stream.cuh and decode_layers_attend.cuh): its sizes, its shared-memory
// layout and arguments, and the consumers' synchronisation (a named barrier among the consumer
// warps, mbarrier waits with a watchdog, the grid barrier, the trace's stamps). Device code for
// sm_90a only, like hopper_ptx.cuh. C++17.
#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>

#include "engine/cuda/decode_layers.hpp"
#include "engine/cuda/hopper_ptx.cuh"

namespace inferlab::engine::cuda::persistent_decode {

using bf16 = __nv_bfloat16;

constexpr int kConsumerWarps = 8, kConsumers = 32 * kConsumerWarps;
constexpr int kProducers = 128;  // four producer warps
constexpr int kThreads = kConsumers + kProducers;
// A tile (one ring slot): 16 rows × 512 columns of a matrix, one mma row block by 32 k-steps,
// each row's 1 KB at a pitch of 1040 bytes so that ldmatrix's eight row addresses fall in
// different banks.
constexpr int kTileRows = 16, kTileCols = 512;
constexpr int kChunkBytes = 2 * kTileCols;  // one row of a tile, one bulk copy
constexpr int kRowPitch = kChunkBytes + 16;
constexpr int kWidthMultiple = kTileCols;  // rows are whole tiles wide
constexpr int kSlotBytes = kTileRows * kRowPitch;
constexpr int kMaxSlots = 16, kMinSlots = 4;
// Attention positions per pass: as many as 16 KB of values hold (128 at head_dim 64, 64 at 128).
constexpr int kPassBytes = 16384;
constexpr int kMaxGroup = 8;          // query heads per KV head
constexpr int kMaxChunks = 256;       // attention items per KV head, at most
constexpr int kMaxNormWidth = 16384;  // hidden sizes the norm holds in registers
constexpr size_t kSmemLimit = 227 * 1024;
// About 4 s at 2 GHz: far past any wait of a working kernel, short of the watchdogs above it.
constexpr long long kTimeoutCycles = 8'000'000'000LL;
constexpr int kMiscFloats = 64;  // norm partials [0, 8), m 16-23, l 24-31, rescale 32-39,
                                 // the last-item flag 40, tiles issued 48

enum Stage { kQkv, kO, kGateUp, kDown };

// Shared memory, in bytes from the dynamic base; the same on host and device.
struct Layout {
  int slots = 0;
  int max_rows = 0;  // a block's rows in its widest stage: each warp's accumulators
  int bars = 0, misc = 0, acc = 0, work = 0, ring = 0, total = 0;
};

struct Args {
  PersistentDecodeParams p;
  Layout l;
};

__host__ __device__ constexpr int ceil_div(int a, int b) {
  return (a + b - 1) / b;
}
__host__ __device__ constexpr int align_up(int a, int b) {
  return ceil_div(a, b) * b;
}

#ifdef INFERLAB_HOPPER_DEVICE_CODE
using namespace hopper;

__device__ __forceinline__ void consumer_sync() {
  asm volatile("bar.sync 1, %0;\n" ::"n"(kConsumers) : "memory");
}

__device__ __forceinline__ void wait_phase(uint32_t bar, uint32_t parity) {
  if (mbar_try_wait(bar, parity)) return;
  const long long start = clock64();
  while (!mbar_try_wait(bar, parity)) {
    if (clock64() - start > kTimeoutCycles) __trap();
  }
}

// The trace (PersistentDecodeParams::trace): stamp k of this block, by thread 0.
__device__ __forceinline__ void stamp(const Args& a, int k) {
  if (a.p.trace == nullptr || threadIdx.x != 0) return;
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(now));
  a.p.trace[static_cast<int64_t>(blockIdx.x) * persistent_decode_trace_stamps(a.p.shape) + k] = now;
}

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Every block's consumers reach this point before any goes on; `target` counts the arrivals
// this block has waited for so far (thread 0's register).
__device__ void grid_sync(unsigned* count, unsigned& target) {
  consumer_sync();
  if (threadIdx.x == 0) {
    target += gridDim.x;
    // A release reduction: the block's writes (ordered before it by the bar.sync above) are
    // visible to whoever acquires the count, with no separate fence's round trip to L2 first.
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;\n" ::"l"(count) : "memory");
    const long long start = clock64();
    while (load_acquire(count) < target) {
      if (clock64() - start > kTimeoutCycles) __trap();
    }
  }
  consumer_sync();
}
#endif  // INFERLAB_HOPPER_DEVICE_CODE

}  // namespace inferlab::engine::cuda::persistent_decode
