#pragma once
#include <cstdint>
#include <span>

#include "engine/kv_cache.hpp"

// The CPU reference operators, fp32, plain loops: the oracle for the CUDA kernels.
namespace inferlab::engine::cpu {

// Σ a[i] b[i] with eight running partial sums (fixed order: deterministic, and vectorizable).
float dot(const float* a, const float* b, int64_t n);

// out = x / sqrt(mean(x²) + eps) ⊙ weight (HF LlamaRMSNorm, fp32). out may alias x.
void rms_norm(const float* x, const float* weight, int64_t n, double eps, float* out);

// y[r, o] = Σ_i x[r, i] W[o, i] (+ bias[o]): nn.Linear, W of shape [out_features, in_features].
void linear(const float* x, int64_t rows, const float* weight, const float* bias,
            int64_t in_features, int64_t out_features, float* y);

// SiLU(gate) ⊙ up, in place in gate.
void silu_mul(float* gate, const float* up, int64_t n);

struct AttentionShape {
  int64_t num_heads = 0;     // query heads
  int64_t num_kv_heads = 0;  // query head h reads KV head h / (num_heads / num_kv_heads)
  int64_t head_dim = 0;
  int64_t sliding_window = 0;  // 0: none; else keys at positions > position - window
};

// Causal attention over contiguous tensors: q [tokens, num_heads, head_dim], k and v
// [tokens, num_kv_heads, head_dim], token t attending to tokens 0..t; out [tokens, num_heads,
// head_dim]. Scores scaled by 1/sqrt(head_dim), softmax in double.
void causal_attention(const float* q, const float* k, const float* v, int64_t tokens,
                      const AttentionShape& shape, float* out);

// One query token at `position` (q: [num_heads, head_dim]) attending to positions
// [0, position] of its sequence (within the sliding window), keys and values read from the paged
// cache through the block table; out [num_heads, head_dim].
void paged_attention(const float* q, int64_t position, const CpuKvCache& cache, int64_t layer,
                     std::span<const int32_t> block_table, const AttentionShape& shape, float* out);

}  // namespace inferlab::engine::cpu
