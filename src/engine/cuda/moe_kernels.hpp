#pragma once
// The CUDA backend's mixture-of-experts kernels (bf16 weights and activations, fp32 math):
// routing with top-k, a counting sort of the (token, choice) slots by expert, the experts'
// gate/up and down products for few slots (decode: slot by slot, only the chosen experts'
// weights read), the gather of slot inputs for the tensor-core path (a cuBLASLt GEMM per expert
// over its contiguous rows), and the weighted combine. Rounded where transformers' bf16 Mixtral
// rounds (MixtralTopKRouter and MixtralExperts): bf16 router logits, softmax and top-k in fp32,
// each expert's output times its weight rounded to bf16 and added into a bf16 sum in expert order.
// The CPU reference is engine/cpu/moe.hpp (checked in tests/engine/cuda/moe_kernels_test.cpp).
// Every launcher runs on `stream`, allocates nothing and never synchronises (graph-capturable).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace inferlab::engine::cuda {

// Experts a router may have, and choices per token, that the routing kernel takes.
constexpr int kMoeMaxExperts = 256;
constexpr int kMoeMaxTopK = 16;

// The device buffers of one MoE layer's routing; slot s = token · top_k + j is token's j-th
// choice (j = 0 the largest weight).
struct MoeRouting {
  int32_t* expert_ids = nullptr;      // [slots] the expert of each slot
  float* expert_weights = nullptr;    // [slots] its weight (fp32)
  int32_t* expert_offsets = nullptr;  // [num_experts + 1]: expert e's slots sit at sorted
                                      // positions [offsets[e], offsets[e + 1])
  int32_t* sorted_slots = nullptr;    // [slots] slot ids grouped by expert
  int32_t* slot_position = nullptr;   // [slots] each slot's sorted position
  float* router_logits = nullptr;     // [tokens, num_experts] scratch: with it, moe_route spreads
                                      // a pass of few tokens' router over many blocks
};

// Router logits bf16(x[t] · router[e]) (fp32 sums), softmax over all experts in fp32, the
// top_k largest (ties: the lower expert index, as torch.topk), their probabilities
// renormalised to sum to 1 when `renormalize` (Mixtral), else kept (Qwen2-MoE without
// norm_topk_prob). x: [tokens, hidden], router: [num_experts, hidden]. 1 <= top_k <=
// num_experts <= kMoeMaxExperts, top_k <= kMoeMaxTopK.
void moe_route(const __nv_bfloat16* x, const __nv_bfloat16* router, int tokens, int hidden,
               int num_experts, int top_k, bool renormalize, const MoeRouting& routing,
               cudaStream_t stream);

// moe_route's selection alone, from logits already in routing.router_logits [tokens,
// num_experts] (fp32, rounded to bf16 here as nn.Linear's output): the second half of routing
// a prefill whose router logits came from a cuBLASLt GEMM.
void moe_select(int tokens, int num_experts, int top_k, bool renormalize, const MoeRouting& routing,
                cudaStream_t stream);

// Counting sort of the tokens · top_k slots by routing.expert_ids: offsets, sorted slots (in
// slot order within an expert) and every slot's position. One block.
void moe_sort_by_expert(int slots, int num_experts, const MoeRouting& routing, cudaStream_t stream);

// Decode form, slot by slot (the sort is not needed): for every slot s < slots (token
// t = s / top_k, expert e = expert_ids[s]), act[s, i] = bf16(bf16(silu(g)) · u) with
// g = bf16(gate_up[e][i] · x[t]), u = bf16(gate_up[e][inter + i] · x[t]); gate_up:
// [num_experts][2 inter, hidden] (each expert's gate rows then its up rows). Only the experts the
// slots chose are read, once per slot that chose them: a pass for few slots.
void moe_expert_gate_up(const __nv_bfloat16* x, const __nv_bfloat16* gate_up, int slots, int top_k,
                        int hidden, int inter, const MoeRouting& routing, __nv_bfloat16* act,
                        cudaStream_t stream);

// Decode form: y[s, :] = bf16(down[e] · act[s]) for every slot s (e = expert_ids[s]);
// down: [num_experts][hidden, inter].
void moe_expert_down(const __nv_bfloat16* act, const __nv_bfloat16* down, int slots, int hidden,
                     int inter, const MoeRouting& routing, __nv_bfloat16* y, cudaStream_t stream);

// Grouped form (after moe_sort_by_expert): the decode kernels' products, act and y by slot as
// theirs and bit for bit equal to them, but each chosen expert's weights read once for all its
// slots (8 at a time) instead of once per slot. A block row per expert, whatever the routing:
// no host read of the counts, graph-capturable; CUDA-core arithmetic, for a few slots an expert.
void moe_grouped_gate_up(const __nv_bfloat16* x, const __nv_bfloat16* gate_up, int num_experts,
                         int top_k, int hidden, int inter, const MoeRouting& routing,
                         __nv_bfloat16* act, cudaStream_t stream);
void moe_grouped_down(const __nv_bfloat16* act, const __nv_bfloat16* down, int num_experts,
                      int hidden, int inter, const MoeRouting& routing, __nv_bfloat16* y,
                      cudaStream_t stream);

// Tensor-core form's input: rows[p, :] = x[sorted_slots[p] / top_k, :] for p < slots.
void moe_gather_slots(const __nv_bfloat16* x, int slots, int top_k, int hidden,
                      const MoeRouting& routing, __nv_bfloat16* rows, cudaStream_t stream);

// Tensor-core form in one launch (moe_grouped_gemm.cu), after moe_sort_by_expert and
// moe_gather_slots: the rows x [slots, k] sit grouped by expert, expert e's at sorted positions
// [expert_offsets[e], expert_offsets[e + 1]), and every row is multiplied by its own expert's
// weights, y[p, c] = bf16(w[e][c] · x[p]) with w [num_experts][out_cols, k], fp32 sums. The
// counts stay on the device (no host read: graph-capturable). Needs moe_grouped_gemm_fits (k and
// out_cols positive multiples of 8: 16-byte rows). `stages`: the cp.async ring's depth, 2 or 3;
// 0 takes 3 where the GPU's shared memory per block allows (Hopper, A100), else 2.
bool moe_grouped_gemm_fits(int out_cols, int k);
void moe_grouped_gemm(const __nv_bfloat16* x, const __nv_bfloat16* w, int slots, int num_experts,
                      int out_cols, int k, const int32_t* expert_offsets, __nv_bfloat16* y,
                      cudaStream_t stream, int stages = 0);
// The gate/up product with SiLU×mul applied before the store: gate_up [num_experts][2 inter, k]
// (gate rows, then up rows), act[p, i] = bf16(bf16(silu(g)) · u) with g and u the gate and up
// sums rounded to bf16 (silu_mul_halves' roundings). Needs moe_grouped_gemm_fits(inter, k).
void moe_grouped_gemm_swiglu(const __nv_bfloat16* x, const __nv_bfloat16* gate_up, int slots,
                             int num_experts, int inter, int k, const int32_t* expert_offsets,
                             __nv_bfloat16* act, cudaStream_t stream, int stages = 0);

// out[t, :] = Σ over token t's choices, in increasing expert order, of bf16(weight · y[row, :])
// with row the slot (`by_slot`: the decode form's output) or its sorted position (the GEMM
// form's), each add rounded to bf16 (index_add_ into a bf16 tensor, experts visited in order).
void moe_combine(const __nv_bfloat16* y, bool by_slot, int tokens, int top_k, int hidden,
                 const MoeRouting& routing, __nv_bfloat16* out, cudaStream_t stream);

}  // namespace inferlab::engine::cuda
