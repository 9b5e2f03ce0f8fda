// The persistent decode kernel (decode_layers.hpp): four producer warps per block stream the
// block's weight rows into a ring of shared-memory slots with cp.async; eight consumer warps
// stage each stage's input, multiply on the tensor cores, attend, and meet the other blocks at
// grid barriers.
//
// Work split: stage by stage, block b owns rows [n·b/G, n·(b+1)/G) of each matrix (G blocks),
// gate/up: the same features of both halves. A slot holds a tile of 16 of those rows by 512
// columns; tile t belongs to consumer warp t % 8, which adds its rows' sums into its own
// accumulators in shared memory; the eight warps' accumulators are summed in a fixed order at
// the end of the stage (deterministic).
//
// What was measured while building it (H200, MEASUREMENTS §53): the first form (one thread's
// 16 KB bulk copy a slot, the eight warps sharing each slot's CUDA-core FMAs) took 1.63 ms for
// the 1B step; a warp per slot on CUDA cores streamed 31.5 KB a µs a block in gate/up; tensor-core
// tiles of 16 rows need 1 KB pieces of separate rows, which bulk copies moved at 15-24 KB a µs
// whether one lane or sixteen issued them; cp.async from four warps moves 31-33 KB a µs, the
// block's share of HBM. Prefetching further ahead into L2 (cp.async.bulk.prefetch) cost 32-62%.
//
// Memory model. Activations written in one stage are read by other blocks after a grid barrier
// (bar.sync, then one thread's release reduction, an acquire spin): those reads go through L2
// (ld.global.cg), never the non-coherent path, since the data changed during the kernel. The
// cache row of the new token is written in stage B and read by no block in this launch (the
// item holding it uses the values it computed).
#include <cuda_bf16.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/decode_layers.hpp"
#include "engine/cuda/decode_layers_attend.cuh"
#include "engine/cuda/decode_layers_common.cuh"
#include "engine/cuda/decode_layers_stream.cuh"
#include "engine/cuda/device_facts.hpp"

namespace inferlab::engine::cuda {

namespace {

using namespace persistent_decode;

Layout layout_of(const PersistentDecodeShape& s, int grid, int slots) {
  const int q_dim = s.num_heads * s.head_dim, kv_dim = s.num_kv_heads * s.head_dim;
  const int group = s.num_heads / s.num_kv_heads;
  Layout l;
  l.max_rows = std::max({ceil_div(q_dim + 2 * kv_dim, grid), ceil_div(s.hidden, grid),
                         2 * ceil_div(s.intermediate, grid)});
  l.bars = 0;
  l.misc = 2 * kMaxSlots * 8;
  l.acc = l.misc + kMiscFloats * 4;
  l.work = align_up(l.acc + kConsumerWarps * l.max_rows * 4, 16);
  const int staged = 2 * std::max({s.hidden, q_dim, s.intermediate});
  // Queries, scores, the position groups' P·V sums, the pass's values, the new key and value.
  const int pass = kPassBytes / (2 * s.head_dim);
  const int attention = 4 * group * (s.head_dim + pass) +
                        4 * (kConsumers / (s.head_dim / 2)) * group * s.head_dim + kPassBytes +
                        2 * 2 * s.head_dim;
  l.ring = align_up(l.work + align_up(std::max(staged, attention), 16), 1024);
  l.slots = slots;
  l.total = l.ring + slots * kSlotBytes;
  return l;
}

// The most slots that fit beside the rest, at most `cap` when positive (0 when fewer than
// kMinSlots fit).
Layout plan(const PersistentDecodeShape& s, int grid, int cap = 0) {
  const Layout bare = layout_of(s, grid, 0);
  int slots = std::min(kMaxSlots, (static_cast<int>(kSmemLimit) - bare.total) / kSlotBytes);
  if (cap > 0 && slots >= kMinSlots) slots = std::max(kMinSlots, std::min(slots, cap));
  return layout_of(s, grid, slots >= kMinSlots ? slots : 0);
}

#ifdef INFERLAB_HOPPER_DEVICE_CODE
template <int D>
__device__ void consume(const Args& a, unsigned char* smem) {
  const PersistentDecodeShape& s = a.p.shape;
  int tiles = 0;  // slots filled so far (the producer's count)
  unsigned target = 0;
  unsigned* barrier = a.p.counters;
  stamp(a, 0);
  for (int layer = 0; layer < s.layers; ++layer) {
    const PersistentDecodeLayer w = a.p.layers[layer];
    const int k = 1 + 10 * layer;  // this layer's stamps: each stage's end, then its barrier's
    Segment seg[2];
    // A: norm, QKV.
    stage_norm(a, smem, a.p.residual, w.input_norm);
    int n = segments_of(s, w, kQkv, seg);
    multiply(a, smem, seg, n, tiles);
    finish_rows(a, smem, seg[0], a.p.qkv, false);
    stamp(a, k);
    grid_sync(barrier, target);
    stamp(a, k + 1);
    // B: attention.
    attend<D>(a, smem, w);
    stamp(a, k + 2);
    grid_sync(barrier, target);
    stamp(a, k + 3);
    // C: O, residual add.
    stage_copy(a, smem, a.p.attn, s.num_heads * D);
    n = segments_of(s, w, kO, seg);
    multiply(a, smem, seg, n, tiles);
    finish_rows(a, smem, seg[0], a.p.residual, true);
    stamp(a, k + 4);
    grid_sync(barrier, target);
    stamp(a, k + 5);
    // D: norm, gate/up, SiLU × up.
    stage_norm(a, smem, a.p.residual, w.post_norm);
    n = segments_of(s, w, kGateUp, seg);
    multiply(a, smem, seg, n, tiles);
    finish_swiglu(a, smem, seg[0]);
    stamp(a, k + 6);
    grid_sync(barrier, target);
    stamp(a, k + 7);
    // E: down, residual add (the next layer's barrier follows its norm's reads of all rows).
    stage_copy(a, smem, a.p.act, s.intermediate);
    n = segments_of(s, w, kDown, seg);
    multiply(a, smem, seg, n, tiles);
    finish_rows(a, smem, seg[0], a.p.residual, true);
    stamp(a, k + 8);
    if (layer + 1 < s.layers) grid_sync(barrier, target);
    stamp(a, k + 9);
  }
  // The last block out leaves the counters at zero for the next launch: every block has passed
  // every barrier by then.
  if (threadIdx.x == 0 && atomicAdd(a.p.counters + 1, 1u) == gridDim.x - 1) {
    atomicExch(a.p.counters, 0u);
    atomicExch(a.p.counters + 1, 0u);
  }
}
#endif  // INFERLAB_HOPPER_DEVICE_CODE

template <int D>
__global__ void __launch_bounds__(kThreads, 1) persistent_decode_kernel(const Args a) {
#ifdef INFERLAB_HOPPER_DEVICE_CODE
  extern __shared__ __align__(1024) unsigned char smem[];
  if (threadIdx.x == 0) {
    const uint32_t bars = smem_u32(smem + a.l.bars);
    for (int i = 0; i < a.l.slots; ++i) {
      mbar_init(bars + 8 * i, kProducers);       // full: every producer thread, as its copies land
      mbar_init(bars + 8 * (kMaxSlots + i), 1);  // empty: its warp
    }
    fence_mbarrier_init();
    reinterpret_cast<volatile int*>(smem + a.l.misc)[48] = 0;
  }
  __syncthreads();
  if (threadIdx.x >= kConsumers) {
    produce(a, smem);
    return;
  }
  consume<D>(a, smem);
#endif
}

bool image_loads() {
  static const bool loads = [] {
    cudaFuncAttributes attributes{};
    if (cudaFuncGetAttributes(&attributes, persistent_decode_kernel<128>) == cudaSuccess) {
      return true;
    }
    (void)cudaGetLastError();  // not sticky: clear it for the next launch check
    return false;
  }();
  return loads;
}

}  // namespace

bool persistent_decode_supported(const PersistentDecodeShape& s, int device_cc) {
  if (device_cc != 90 || s.layers < 1 || s.block_size < 1) return false;
  if (s.head_dim != 64 && s.head_dim != 128) return false;
  if (s.num_kv_heads < 1 || s.num_heads % s.num_kv_heads != 0) return false;
  if (s.num_heads / s.num_kv_heads > kMaxGroup) return false;
  const int q_dim = s.num_heads * s.head_dim;
  for (int width : {s.hidden, q_dim, s.intermediate}) {
    if (width < kWidthMultiple || width % kWidthMultiple != 0) return false;
  }
  if (s.hidden > kMaxNormWidth) return false;
  if (!image_loads()) return false;
  return plan(s, current_device_facts().sm_count).slots > 0;
}

size_t persistent_decode_partial_floats(const PersistentDecodeShape& s) {
  return static_cast<size_t>(s.num_heads) * kMaxChunks * (s.head_dim + 2);
}

size_t persistent_decode_counters(const PersistentDecodeShape& s) {
  return 2 + static_cast<size_t>(s.num_kv_heads);
}

void launch_persistent_decode(const PersistentDecodeParams& p, cudaStream_t stream) {
  const int grid = current_device_facts().sm_count;
  const Args args{p, plan(p.shape, grid, p.ring_slots)};
  if (args.l.slots == 0) {
    throw std::invalid_argument("launch_persistent_decode: the shape does not fit shared memory");
  }
  auto* kernel =
      p.shape.head_dim == 128 ? persistent_decode_kernel<128> : persistent_decode_kernel<64>;
  static std::atomic<uint64_t> limit_set{0};
  once_per_device(limit_set, [] {
    for (auto* k : {persistent_decode_kernel<64>, persistent_decode_kernel<128>}) {
      INFERLAB_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(kSmemLimit)));
    }
  });
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(grid));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = static_cast<size_t>(args.l.total);
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeCooperative;  // every block resident: the grid barriers
  attribute[0].val.cooperative = 1;
  config.attrs = attribute;
  config.numAttrs = 1;
  INFERLAB_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args));
}

}  // namespace inferlab::engine::cuda
