#pragma once
// How the engine runs a mixture of experts' MLP in a pass (engine/cuda/cuda_moe.cpp) and how the
// prediction prices it (model/engine_blocks.cpp): both read the rules here, so they cannot drift
// apart. C++17: CUDA sources include it.
#include <cstdint>

namespace inferlab {

// The experts' four forms:
// - slots: the decode kernels, slot by slot (each slot reads its expert's weights): one token,
//   or at most a quarter as many slots as experts (few experts are chosen twice);
// - grouped_gemm: past that, on models of at least kEngineMoeManyExperts experts, below
//   kEngineMoeOneLaunchSlotsPerExpert slots an expert on average, one launch of a tensor-core
//   GEMM over every expert's rows after a device-side sort (engine/cuda/moe_grouped_gemm.cu: the
//   counts stay on the device, so no host read), with SiLU×mul in the gate/up product's
//   epilogue; needs engine_moe_grouped_gemm_fits. On Qwen3-30B-A3B (128 experts of 768) on the
//   H200 a decode step of 32 sequences took 22.1 ms against 41.7 with the grouped kernels (one
//   call); its mma.sync tiles reach 260 TFLOP/s where cuBLASLt's per-expert GEMMs reach 590 at
//   32 × 1024 tokens, so from 256 slots an expert those are faster (one call each: 4096 tokens
//   96.1 against 99.2 ms, 32 × 1024 483.7 against 671.1; MEASUREMENTS §51);
// - grouped: the grouped kernels, each chosen expert's weights read once for all its slots on
//   CUDA cores, sorted on the device too: many experts whose shapes the one-launch GEMM does not
//   take (none the CUDA backend runs), up to kEngineMoeGroupedSlotsPerExpert slots an expert;
// - gemm: a cuBLASLt GEMM per expert reached, after reading the experts' row counts on the host
//   (a synchronisation a layer, so the pass runs eagerly): few wide experts, where cuBLASLt's
//   large tiles reach 600-680 TFLOP/s on the H200 (Mixtral at batch 32: 8 slots an expert; the
//   CUDA-core kernels took 142 ms against 27, MEASUREMENTS §48; the one-launch GEMM 35.9 ms,
//   §51), and the many-expert passes past the other forms.
// All but gemm need no host read: their passes can be captured in CUDA graphs.
enum class MoeExpertForm { slots, grouped, grouped_gemm, gemm };

inline constexpr int64_t kEngineMoeManyExperts = 32;
inline constexpr int64_t kEngineMoeGroupedSlotsPerExpert = 4;
inline constexpr int64_t kEngineMoeOneLaunchSlotsPerExpert = 256;  // exclusive

// The one-launch GEMMs copy rows in 16-byte pieces: the hidden size and each GPU's share of an
// expert's channels in multiples of 8 (what the CUDA backend requires of any MoE model:
// engine/moe_support.hpp).
constexpr bool engine_moe_grouped_gemm_fits(int64_t hidden, int64_t inter) {
  return hidden > 0 && inter > 0 && hidden % 8 == 0 && inter % 8 == 0;
}

// The forms before the one-launch GEMM (INFERLAB_ENGINE_MOE_GEMM=per_expert runs them for A/B).
constexpr MoeExpertForm engine_moe_form_without_grouped_gemm(int64_t tokens, int64_t experts,
                                                             int64_t top_k) {
  const int64_t slots = tokens * top_k;
  if (tokens <= 1 || slots <= experts / 4) return MoeExpertForm::slots;
  if (experts >= kEngineMoeManyExperts && slots <= kEngineMoeGroupedSlotsPerExpert * experts) {
    return MoeExpertForm::grouped;
  }
  return MoeExpertForm::gemm;
}

// `inter`: one expert's channels on this GPU (intermediate_size / tp).
constexpr MoeExpertForm engine_moe_form(int64_t tokens, int64_t experts, int64_t top_k,
                                        int64_t hidden, int64_t inter) {
  const MoeExpertForm form = engine_moe_form_without_grouped_gemm(tokens, experts, top_k);
  if (form != MoeExpertForm::slots && experts >= kEngineMoeManyExperts &&
      tokens * top_k < kEngineMoeOneLaunchSlotsPerExpert * experts &&
      engine_moe_grouped_gemm_fits(hidden, inter)) {
    return MoeExpertForm::grouped_gemm;
  }
  return form;
}

// The router's logits, in one of three forms:
// - block: a block per token computes them all (8 warps, one expert each at a time) and selects
//   the top-k: few experts (Mixtral's 8) and few tokens;
// - split: with many experts and few tokens a block per token is few blocks reading the whole
//   router each (Qwen3-30B-A3B: 512 KB a token, 2.55 ms of a 5.93 ms batch-1 step); the logits
//   spread over blocks of 8 experts and a second kernel selects (0.63 ms, MEASUREMENTS §49);
// - gemm: past kEngineMoeRouteSplitMaxTokens tokens (prefill) the logits are a cuBLASLt GEMM
//   (fp32 out) and the same second kernel selects: a block per token read the router from L2
//   once a token (Qwen3-30B-A3B's 4096-token prefill: 2 GB a layer).
enum class MoeRouteForm { block, split, gemm };

inline constexpr int64_t kEngineMoeRouteSplitMaxTokens = 128;

constexpr MoeRouteForm engine_moe_route_form(int64_t tokens, int64_t experts) {
  if (tokens > kEngineMoeRouteSplitMaxTokens) return MoeRouteForm::gemm;
  return experts > 8 ? MoeRouteForm::split : MoeRouteForm::block;
}

// moe_route's own choice for a pass of at most kEngineMoeRouteSplitMaxTokens tokens.
constexpr bool engine_moe_route_split(int64_t tokens, int64_t experts) {
  return engine_moe_route_form(tokens, experts) == MoeRouteForm::split;
}

}  // namespace inferlab
