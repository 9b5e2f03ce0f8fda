#include <cmath>
#include <cstring>
#include <stdexcept>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/moe_kernels.hpp"
#include "model/engine_moe_rules.hpp"

namespace inferlab::engine::cuda {

namespace {

using bf16 = __nv_bfloat16;
constexpr int kVector = 8;  // bf16 per 16-byte load
constexpr int kWarpsPerBlock = 8;

struct alignas(16) Bf16x8 {
  bf16 v[kVector];
};

__device__ inline float round_bf16(float x) {
  return __bfloat162float(__float2bfloat16(x));
}

__device__ inline float warp_sum(float value) {
  for (int offset = 16; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  }
  return value;
}

// A weight vector, read once: past L1 (ld.global.nc.L1::no_allocate), so that the slot inputs
// every warp of the block re-reads stay there.
__device__ inline Bf16x8 load_weights(const Bf16x8* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  Bf16x8 w;
  memcpy(&w, &v, sizeof(w));
  return w;
}

// Σ w[i] · x[i] over 8 bf16 pairs, fp32.
__device__ inline float dot8(const Bf16x8& w, const Bf16x8& x) {
  float sum = 0;
#pragma unroll
  for (int i = 0; i < kVector; ++i) sum += __bfloat162float(w.v[i]) * __bfloat162float(x.v[i]);
  return sum;
}

// Largest value over the warp, ties to the lower index; every lane gets the winner.
__device__ inline void warp_argmax(float& value, int& index) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other_value = __shfl_xor_sync(0xffffffffu, value, offset);
    const int other_index = __shfl_xor_sync(0xffffffffu, index, offset);
    if (other_value > value || (other_value == value && other_index < index)) {
      value = other_value;
      index = other_index;
    }
  }
}

// Softmax over `logits` (shared, bf16-rounded router logits of token t) and the top_k choices,
// by one warp: the largest first, ties to the lower index; written to routing. Overwrites the
// chosen logits.
__device__ void select_top_k(float* logits, int t, int num_experts, int top_k, bool renormalize,
                             const MoeRouting& routing) {
  const int lane = threadIdx.x % 32;
  float top = -INFINITY;
  for (int e = lane; e < num_experts; e += 32) top = fmaxf(top, logits[e]);
  for (int offset = 16; offset > 0; offset /= 2) {
    top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, offset));
  }
  float total = 0;
  for (int e = lane; e < num_experts; e += 32) total += expf(logits[e] - top);
  total = warp_sum(total);
  float chosen[kMoeMaxTopK];
  float chosen_sum = 0;
  for (int j = 0; j < top_k; ++j) {
    float best = -INFINITY;
    int best_index = num_experts;
    for (int e = lane; e < num_experts; e += 32) {
      if (logits[e] > best) {  // increasing e: ties keep the lower index
        best = logits[e];
        best_index = e;
      }
    }
    warp_argmax(best, best_index);
    // Every logit left NaN or -inf (a broken input): stay inside the experts, not past them.
    best_index = min(best_index, num_experts - 1);
    chosen[j] = expf(best - top) / total;
    chosen_sum += chosen[j];
    if (lane == 0) {
      routing.expert_ids[t * top_k + j] = best_index;
      logits[best_index] = -INFINITY;  // taken
    }
    __syncwarp();
  }
  if (lane == 0) {
    for (int j = 0; j < top_k; ++j) {
      routing.expert_weights[t * top_k + j] = renormalize ? chosen[j] / chosen_sum : chosen[j];
    }
  }
}

// bf16(x[t] · w) by one warp (fp32 sums, nn.Linear's bf16 output).
__device__ inline float router_logit(const bf16* x_row, const bf16* w_row, int hidden) {
  const auto* row = reinterpret_cast<const Bf16x8*>(x_row);
  const auto* w = reinterpret_cast<const Bf16x8*>(w_row);
  float sum = 0;
  for (int v = threadIdx.x % 32; v < hidden / kVector; v += 32) sum += dot8(w[v], row[v]);
  return round_bf16(warp_sum(sum));
}

// Many tokens: a block per token, its warps over the experts, then warp 0 selects.
__global__ void route_kernel(const bf16* x, const bf16* router, int hidden, int num_experts,
                             int top_k, bool renormalize, MoeRouting routing) {
  __shared__ float logits[kMoeMaxExperts];
  const int t = blockIdx.x;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const bf16* row = x + static_cast<int64_t>(t) * hidden;
  for (int e = warp; e < num_experts; e += blockDim.x / 32) {
    const float logit = router_logit(row, router + static_cast<int64_t>(e) * hidden, hidden);
    if (lane == 0) logits[e] = logit;
  }
  __syncthreads();
  if (warp == 0) select_top_k(logits, t, num_experts, top_k, renormalize, routing);
}

// Few tokens (decode): one block per token read all of the router (512 KB for Qwen3-MoE's 128
// experts of 2048) on one SM, ~50 µs; here the logits spread over blocks of kRouteWarps experts
// each, to routing.router_logits, and a second kernel selects.
constexpr int kRouteWarps = 8;

__global__ void router_logits_kernel(const bf16* x, const bf16* router, int hidden, int num_experts,
                                     float* logits) {
  const int t = blockIdx.y;
  const int e = blockIdx.x * kRouteWarps + threadIdx.x / 32;
  if (e >= num_experts) return;  // whole warps: e is the warp's
  const float logit = router_logit(x + static_cast<int64_t>(t) * hidden,
                                   router + static_cast<int64_t>(e) * hidden, hidden);
  if (threadIdx.x % 32 == 0) logits[static_cast<int64_t>(t) * num_experts + e] = logit;
}

__global__ void select_kernel(int num_experts, int top_k, bool renormalize, MoeRouting routing) {
  __shared__ float logits[kMoeMaxExperts];
  const int t = blockIdx.x;
  // (Rounded to bf16, nn.Linear's output: the split router's logits are already, a cuBLASLt
  // GEMM's fp32 ones are not.)
  for (int e = threadIdx.x; e < num_experts; e += 32) {
    logits[e] = round_bf16(routing.router_logits[static_cast<int64_t>(t) * num_experts + e]);
  }
  __syncwarp();
  select_top_k(logits, t, num_experts, top_k, renormalize, routing);
}

// One block of 1024 threads (32 warps), each warp over its own contiguous run of slots: the
// warps count their runs' slots per expert in shared memory; thread 0 scans the totals into the
// experts' offsets; each warp's start within an expert is the offset plus the earlier warps'
// counts; then every warp places its run 32 slots at a time. Runs in slot order and chunks in
// order within a run keep the placement stable (slot order within an expert, deterministic) with
// no atomics on the positions. (One warp placing every slot took ~0.5 ms for a 4096-token
// prefill's 32768 slots.)
constexpr int kSortWarps = 32;

__global__ void sort_kernel(int slots, int num_experts, MoeRouting routing) {
  __shared__ int warp_counts[kSortWarps][kMoeMaxExperts];  // then each warp's running position
  __shared__ int offsets[kMoeMaxExperts + 1];
  __shared__ int totals[kMoeMaxExperts];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // Whole chunks of 32 per warp: the runs past the slots are partial or empty.
  const int run = ((slots + kSortWarps - 1) / kSortWarps + 31) / 32 * 32;
  const int first = min(slots, warp * run), last = min(slots, first + run);
  for (int e = lane; e < num_experts; e += 32) warp_counts[warp][e] = 0;
  __syncwarp();
  for (int s = first + lane; s < last; s += 32)
    atomicAdd(&warp_counts[warp][routing.expert_ids[s]], 1);
  __syncthreads();
  // Each expert's total by its own thread, then one thread's scan over the experts (summing the
  // 32 x E counts in thread 0 alone cost a 128-expert decode ~8 us a layer).
  for (int e = threadIdx.x; e < num_experts; e += blockDim.x) {
    int total = 0;
    for (int w = 0; w < kSortWarps; ++w) total += warp_counts[w][e];
    totals[e] = total;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    offsets[0] = 0;
    for (int e = 0; e < num_experts; ++e) offsets[e + 1] = offsets[e] + totals[e];
  }
  __syncthreads();
  for (int e = threadIdx.x; e <= num_experts; e += blockDim.x) {
    routing.expert_offsets[e] = offsets[e];
  }
  for (int e = threadIdx.x; e < num_experts; e += blockDim.x) {
    int position = offsets[e];
    for (int w = 0; w < kSortWarps; ++w) {
      const int count = warp_counts[w][e];
      warp_counts[w][e] = position;
      position += count;
    }
  }
  __syncthreads();
  int* running = warp_counts[warp];
  for (int base = first; base < last; base += 32) {
    const int s = base + lane;
    const int expert = s < last ? routing.expert_ids[s] : -1;
    int rank = 0, same_count = 0;
    for (int other = 0; other < 32; ++other) {
      const int other_expert = __shfl_sync(0xffffffffu, expert, other);
      if (other_expert == expert) {
        rank += other < lane;
        ++same_count;
      }
    }
    if (expert >= 0) {
      const int position = running[expert] + rank;
      routing.sorted_slots[position] = s;
      routing.slot_position[s] = position;
    }
    __syncwarp();
    // The lowest lane of each expert moves its counter past this chunk's slots.
    if (expert >= 0 && rank == 0) running[expert] += same_count;
    __syncwarp();
  }
}

// Weight vectors a lane loads before it multiplies: enough bytes in flight to stream HBM.
constexpr int kUnroll = 4;

// Slot blockIdx.y's expert (one load: the weights' addresses wait on nothing else); a warp per
// output channel i: the expert's gate row i and up row inter + i dotted with the slot's token's
// input (from L1: every warp of the block reads it).
__global__ void gate_up_kernel(const bf16* x, const bf16* gate_up, int top_k, int hidden, int inter,
                               MoeRouting routing, bf16* act) {
  const int slot = blockIdx.y;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int i = blockIdx.x * kWarpsPerBlock + warp;
  if (i >= inter) return;
  const int e = routing.expert_ids[slot];
  const bf16* expert = gate_up + static_cast<int64_t>(e) * 2 * inter * hidden;
  const auto* gate_row = reinterpret_cast<const Bf16x8*>(expert + static_cast<int64_t>(i) * hidden);
  const auto* up_row =
      reinterpret_cast<const Bf16x8*>(expert + static_cast<int64_t>(inter + i) * hidden);
  const auto* in = reinterpret_cast<const Bf16x8*>(x + static_cast<int64_t>(slot / top_k) * hidden);
  const int vectors = hidden / kVector;
  float gate = 0, up = 0;
  for (int base = lane; base < vectors; base += 32 * kUnroll) {
    Bf16x8 g[kUnroll], u[kUnroll];
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) {
      const int v = base + 32 * j;
      if (v < vectors) {  // (L1-allocating loads measured faster here than no_allocate ones)
        g[j] = gate_row[v];
        u[j] = up_row[v];
      }
    }
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) {
      const int v = base + 32 * j;
      if (v >= vectors) break;
      const Bf16x8 xv = in[v];
      gate += dot8(g[j], xv);
      up += dot8(u[j], xv);
    }
  }
  const float g = round_bf16(warp_sum(gate)), u = round_bf16(warp_sum(up));
  if (lane == 0) {
    const float silu = round_bf16(g / (1.0f + expf(-g)));
    act[static_cast<int64_t>(slot) * inter + i] = __float2bfloat16(silu * u);
  }
}

// Slot blockIdx.y's expert; a warp per output row r of its down matrix, dotted with the slot's
// act row.
__global__ void down_kernel(const bf16* act, const bf16* down, int hidden, int inter,
                            MoeRouting routing, bf16* y) {
  const int slot = blockIdx.y;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int r = blockIdx.x * kWarpsPerBlock + warp;
  if (r >= hidden) return;
  const int e = routing.expert_ids[slot];
  const auto* row =
      reinterpret_cast<const Bf16x8*>(down + (static_cast<int64_t>(e) * hidden + r) * inter);
  const auto* in = reinterpret_cast<const Bf16x8*>(act + static_cast<int64_t>(slot) * inter);
  const int vectors = inter / kVector;
  float sum = 0;
  for (int base = lane; base < vectors; base += 32 * kUnroll) {
    Bf16x8 w[kUnroll];
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) {
      if (base + 32 * j < vectors) w[j] = load_weights(row + base + 32 * j);
    }
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) {
      const int v = base + 32 * j;
      if (v >= vectors) break;
      sum += dot8(w[j], in[v]);
    }
  }
  sum = warp_sum(sum);
  if (lane == 0) y[static_cast<int64_t>(slot) * hidden + r] = __float2bfloat16(sum);
}

// Grouped form: a block row per expert (blockIdx.y), reading its weights once for all the slots
// that chose it (the sort's groups), kGroupedRows slots at a time; each warp owns
// kGroupedChannels output channels (strided by the block's warps, so neighbouring warps read
// neighbouring rows) and computes each as the slot kernels do, every lane summing in the same
// order, so every output is bit for bit the slot kernels'. Several channels a warp because one
// is too little work: a warp reads its expert's counts and slots before any weight, and with one
// channel (two 4 KB rows of Qwen3-30B-A3B) that wait left HBM at 1.2 TB/s (MEASUREMENTS §49).
// Experts nobody chose leave at once: the grid does not depend on the routing, so the pass
// needs no host read of the counts and is graph-capturable.
constexpr int kGroupedRows = 8;
constexpr int kGroupedChannels = 4;

// The slots [first, first + rows) of the sorted order, and their input rows (`inputs` rows of
// `width` bf16, slot s's row s / divisor).
struct GroupedRows {
  int slot[kGroupedRows];
  const Bf16x8* in[kGroupedRows];
};

__device__ inline GroupedRows grouped_rows(const MoeRouting& routing, int first, int rows,
                                           const bf16* inputs, int width, int divisor) {
  GroupedRows g;
#pragma unroll
  for (int r = 0; r < kGroupedRows; ++r) {
    g.slot[r] = r < rows ? routing.sorted_slots[first + r] : 0;
    g.in[r] =
        reinterpret_cast<const Bf16x8*>(inputs + static_cast<int64_t>(g.slot[r] / divisor) * width);
  }
  return g;
}

__global__ void grouped_gate_up_kernel(const bf16* x, const bf16* gate_up, int top_k, int hidden,
                                       int inter, MoeRouting routing, bf16* act) {
  const int e = blockIdx.y;
  const int begin = routing.expert_offsets[e], end = routing.expert_offsets[e + 1];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int first_channel = blockIdx.x * kWarpsPerBlock * kGroupedChannels + warp;
  if (begin == end || first_channel >= inter) return;
  const bf16* expert = gate_up + static_cast<int64_t>(e) * 2 * inter * hidden;
  const int vectors = hidden / kVector;
  for (int first = begin; first < end; first += kGroupedRows) {
    const int rows = min(kGroupedRows, end - first);
    const GroupedRows in = grouped_rows(routing, first, rows, x, hidden, top_k);
    for (int c = 0; c < kGroupedChannels; ++c) {
      const int i = first_channel + c * kWarpsPerBlock;
      if (i >= inter) break;
      const auto* gate_row =
          reinterpret_cast<const Bf16x8*>(expert + static_cast<int64_t>(i) * hidden);
      const auto* up_row =
          reinterpret_cast<const Bf16x8*>(expert + static_cast<int64_t>(inter + i) * hidden);
      float gate[kGroupedRows] = {}, up[kGroupedRows] = {};
      for (int base = lane; base < vectors; base += 32 * kUnroll) {
        Bf16x8 g[kUnroll], u[kUnroll];
#pragma unroll
        for (int j = 0; j < kUnroll; ++j) {
          const int v = base + 32 * j;
          if (v < vectors) {
            g[j] = gate_row[v];
            u[j] = up_row[v];
          }
        }
#pragma unroll
        for (int j = 0; j < kUnroll; ++j) {
          const int v = base + 32 * j;
          if (v >= vectors) break;
#pragma unroll
          for (int r = 0; r < kGroupedRows; ++r) {
            if (r < rows) {
              const Bf16x8 xv = in.in[r][v];
              gate[r] += dot8(g[j], xv);
              up[r] += dot8(u[j], xv);
            }
          }
        }
      }
#pragma unroll
      for (int r = 0; r < kGroupedRows; ++r) {
        if (r >= rows) break;  // rows is the warp's: the shuffles stay full-warp
        const float gv = round_bf16(warp_sum(gate[r])), uv = round_bf16(warp_sum(up[r]));
        if (lane == 0) {
          const float silu = round_bf16(gv / (1.0f + expf(-gv)));
          act[static_cast<int64_t>(in.slot[r]) * inter + i] = __float2bfloat16(silu * uv);
        }
      }
    }
  }
}

__global__ void grouped_down_kernel(const bf16* act, const bf16* down, int hidden, int inter,
                                    MoeRouting routing, bf16* y) {
  const int e = blockIdx.y;
  const int begin = routing.expert_offsets[e], end = routing.expert_offsets[e + 1];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int first_row = blockIdx.x * kWarpsPerBlock * kGroupedChannels + warp;
  if (begin == end || first_row >= hidden) return;
  const int vectors = inter / kVector;
  for (int first = begin; first < end; first += kGroupedRows) {
    const int rows = min(kGroupedRows, end - first);
    const GroupedRows in = grouped_rows(routing, first, rows, act, inter, 1);
    for (int c = 0; c < kGroupedChannels; ++c) {
      const int out_row = first_row + c * kWarpsPerBlock;
      if (out_row >= hidden) break;
      const auto* row = reinterpret_cast<const Bf16x8*>(
          down + (static_cast<int64_t>(e) * hidden + out_row) * inter);
      float sum[kGroupedRows] = {};
      for (int base = lane; base < vectors; base += 32 * kUnroll) {
        Bf16x8 w[kUnroll];
#pragma unroll
        for (int j = 0; j < kUnroll; ++j) {
          if (base + 32 * j < vectors) w[j] = load_weights(row + base + 32 * j);
        }
#pragma unroll
        for (int j = 0; j < kUnroll; ++j) {
          const int v = base + 32 * j;
          if (v >= vectors) break;
#pragma unroll
          for (int r = 0; r < kGroupedRows; ++r) {
            if (r < rows) sum[r] += dot8(w[j], in.in[r][v]);
          }
        }
      }
#pragma unroll
      for (int r = 0; r < kGroupedRows; ++r) {
        if (r >= rows) break;
        const float total = warp_sum(sum[r]);
        if (lane == 0) {
          y[static_cast<int64_t>(in.slot[r]) * hidden + out_row] = __float2bfloat16(total);
        }
      }
    }
  }
}

__global__ void gather_kernel(const bf16* x, int top_k, int hidden, MoeRouting routing,
                              bf16* rows) {
  const int p = blockIdx.x;
  const int token = routing.sorted_slots[p] / top_k;
  const auto* src = reinterpret_cast<const Bf16x8*>(x + static_cast<int64_t>(token) * hidden);
  auto* dst = reinterpret_cast<Bf16x8*>(rows + static_cast<int64_t>(p) * hidden);
  for (int v = threadIdx.x; v < hidden / kVector; v += blockDim.x) dst[v] = src[v];
}

// A thread per 8 features of a token; the token's choices visited in increasing expert order.
__global__ void combine_kernel(const bf16* y, bool by_slot, int tokens, int top_k, int hidden,
                               MoeRouting routing, bf16* out) {
  const int vectors = hidden / kVector;
  const int64_t index = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= static_cast<int64_t>(tokens) * vectors) return;
  const int t = static_cast<int>(index / vectors), v = static_cast<int>(index % vectors);
  const int32_t* ids = routing.expert_ids + t * top_k;
  float sum[kVector] = {};
  int previous = -1;
  for (int j = 0; j < top_k; ++j) {
    int next = -1;  // the choice with the smallest expert index above `previous`
    for (int c = 0; c < top_k; ++c) {
      if (ids[c] > previous && (next < 0 || ids[c] < ids[next])) next = c;
    }
    previous = ids[next];
    const int slot = t * top_k + next;
    const float weight = round_bf16(routing.expert_weights[slot]);
    const int row = by_slot ? slot : routing.slot_position[slot];
    const Bf16x8 in = reinterpret_cast<const Bf16x8*>(y + static_cast<int64_t>(row) * hidden)[v];
#pragma unroll
    for (int i = 0; i < kVector; ++i) {
      sum[i] = round_bf16(sum[i] + round_bf16(weight * __bfloat162float(in.v[i])));
    }
  }
  Bf16x8 result;
#pragma unroll
  for (int i = 0; i < kVector; ++i) result.v[i] = __float2bfloat16(sum[i]);
  reinterpret_cast<Bf16x8*>(out + static_cast<int64_t>(t) * hidden)[v] = result;
}

void check_widths(int hidden, int inter) {
  if (hidden % kVector != 0 || inter % kVector != 0) {
    throw std::invalid_argument(
        "MoE kernels: hidden and intermediate sizes must be multiples of 8");
  }
}

}  // namespace

void moe_route(const bf16* x, const bf16* router, int tokens, int hidden, int num_experts,
               int top_k, bool renormalize, const MoeRouting& routing, cudaStream_t stream) {
  if (num_experts < 1 || num_experts > kMoeMaxExperts || top_k < 1 || top_k > num_experts ||
      top_k > kMoeMaxTopK) {
    throw std::invalid_argument("moe_route: need 1 <= top_k <= num_experts <= 256, top_k <= 16");
  }
  check_widths(hidden, kVector);
  if (tokens == 0) return;
  if (routing.router_logits != nullptr && engine_moe_route_split(tokens, num_experts)) {
    const dim3 grid((num_experts + kRouteWarps - 1) / kRouteWarps, tokens);
    router_logits_kernel<<<grid, 32 * kRouteWarps, 0, stream>>>(x, router, hidden, num_experts,
                                                                routing.router_logits);
    INFERLAB_CUDA_CHECK_LAUNCH();
    select_kernel<<<tokens, 32, 0, stream>>>(num_experts, top_k, renormalize, routing);
    INFERLAB_CUDA_CHECK_LAUNCH();
    return;
  }
  route_kernel<<<tokens, 256, 0, stream>>>(x, router, hidden, num_experts, top_k, renormalize,
                                           routing);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void moe_select(int tokens, int num_experts, int top_k, bool renormalize, const MoeRouting& routing,
                cudaStream_t stream) {
  if (num_experts < 1 || num_experts > kMoeMaxExperts || top_k < 1 || top_k > num_experts ||
      top_k > kMoeMaxTopK || routing.router_logits == nullptr) {
    throw std::invalid_argument(
        "moe_select: need router logits and 1 <= top_k <= num_experts <= 256, top_k <= 16");
  }
  if (tokens == 0) return;
  select_kernel<<<tokens, 32, 0, stream>>>(num_experts, top_k, renormalize, routing);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void moe_sort_by_expert(int slots, int num_experts, const MoeRouting& routing,
                        cudaStream_t stream) {
  if (num_experts < 1 || num_experts > kMoeMaxExperts) {
    throw std::invalid_argument("moe_sort_by_expert: need 1 <= num_experts <= 256");
  }
  sort_kernel<<<1, 32 * kSortWarps, 0, stream>>>(slots, num_experts, routing);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void moe_expert_gate_up(const bf16* x, const bf16* gate_up, int slots, int top_k, int hidden,
                        int inter, const MoeRouting& routing, bf16* act, cudaStream_t stream) {
  check_widths(hidden, inter);
  if (slots == 0) return;
  const dim3 grid((inter + kWarpsPerBlock - 1) / kWarpsPerBlock, slots);
  gate_up_kernel<<<grid, 32 * kWarpsPerBlock, 0, stream>>>(x, gate_up, top_k, hidden, inter,
                                                           routing, act);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void moe_expert_down(const bf16* act, const bf16* down, int slots, int hidden, int inter,
                     const MoeRouting& routing, bf16* y, cudaStream_t stream) {
  check_widths(hidden, inter);
  if (slots == 0) return;
  const dim3 grid((hidden + kWarpsPerBlock - 1) / kWarpsPerBlock, slots);
  down_kernel<<<grid, 32 * kWarpsPerBlock, 0, stream>>>(act, down, hidden, inter, routing, y);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void moe_grouped_gate_up(const bf16* x, const bf16* gate_up, int num_experts, int top_k, int hidden,
                         int inter, const MoeRouting& routing, bf16* act, cudaStream_t stream) {
  check_widths(hidden, inter);
  if (num_experts < 1) return;
  constexpr int kPerBlock = kWarpsPerBlock * kGroupedChannels;
  const dim3 grid((inter + kPerBlock - 1) / kPerBlock, num_experts);
  grouped_gate_up_kernel<<<grid, 32 * kWarpsPerBlock, 0, stream>>>(x, gate_up, top_k, hidden, inter,
                                                                   routing, act);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void moe_grouped_down(const bf16* act, const bf16* down, int num_experts, int hidden, int inter,
                      const MoeRouting& routing, bf16* y, cudaStream_t stream) {
  check_widths(hidden, inter);
  if (num_experts < 1) return;
  constexpr int kPerBlock = kWarpsPerBlock * kGroupedChannels;
  const dim3 grid((hidden + kPerBlock - 1) / kPerBlock, num_experts);
  grouped_down_kernel<<<grid, 32 * kWarpsPerBlock, 0, stream>>>(act, down, hidden, inter, routing,
                                                                y);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void moe_gather_slots(const bf16* x, int slots, int top_k, int hidden, const MoeRouting& routing,
                      bf16* rows, cudaStream_t stream) {
  check_widths(hidden, kVector);
  if (slots == 0) return;
  gather_kernel<<<slots, 128, 0, stream>>>(x, top_k, hidden, routing, rows);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void moe_combine(const bf16* y, bool by_slot, int tokens, int top_k, int hidden,
                 const MoeRouting& routing, bf16* out, cudaStream_t stream) {
  check_widths(hidden, kVector);
  if (tokens == 0) return;
  const int64_t threads = static_cast<int64_t>(tokens) * (hidden / kVector);
  const auto blocks = static_cast<unsigned>((threads + 255) / 256);
  combine_kernel<<<blocks, 256, 0, stream>>>(y, by_slot, tokens, top_k, hidden, routing, out);
  INFERLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace inferlab::engine::cuda
