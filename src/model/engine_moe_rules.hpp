#pragma once
// How the engine runs a mixture of experts' MLP in a pass (engine/cuda/cuda_moe.cpp) and how the
// prediction prices it (model/engine_blocks.cpp): both read the rules here, so they cannot drift
// apart. C++17: CUDA sources include it.
#include <cstdint>

namespace inferlab {

// The experts' three forms:
// - slots: the decode kernels, slot by slot (each slot reads its expert's weights): one token,
//   or at most a quarter as many slots as experts (few experts are chosen twice);
// - grouped: the grouped kernels after a device-side sort, each chosen expert's weights read
//   once for all its slots, on CUDA cores: models of at least kEngineMoeGroupedMinExperts
//   experts, up to kEngineMoeGroupedSlotsPerExpert slots an expert on average. Measured on
//   Qwen3-30B-A3B (128 experts of 768) at batch 32, 2 slots an expert: 41.9 ms a step against
//   75.7 with the GEMMs (MEASUREMENTS §49). Not measured on few wide experts (Mixtral's 8 of
//   14336 keep their measured forms);
// - gemm: a cuBLASLt GEMM per expert reached, after reading the experts' row counts on the host
//   (a synchronisation a layer, so the pass runs eagerly): more slots an expert, where tensor
//   cores pay (Mixtral at batch 32: 8 an expert; the CUDA-core kernels took 142 ms against 27,
//   MEASUREMENTS §48).
// slots and grouped need no host read: their passes can be captured in CUDA graphs.
enum class MoeExpertForm { slots, grouped, gemm };

inline constexpr int64_t kEngineMoeGroupedMinExperts = 32;
inline constexpr int64_t kEngineMoeGroupedSlotsPerExpert = 4;

constexpr MoeExpertForm engine_moe_form(int64_t tokens, int64_t experts, int64_t top_k) {
  const int64_t slots = tokens * top_k;
  if (tokens <= 1 || slots <= experts / 4) return MoeExpertForm::slots;
  if (experts >= kEngineMoeGroupedMinExperts &&
      slots <= kEngineMoeGroupedSlotsPerExpert * experts) {
    return MoeExpertForm::grouped;
  }
  return MoeExpertForm::gemm;
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
