#pragma once
// The engine's per-layer CUDA kernels other than attention, GEMMs and sampling: embedding
// gather, RMSNorm (alone and fused with the residual add; per head for Qwen3), RoPE fused with the
// KV-cache write, SiLU×mul on the halves of the fused gate/up output, and a row gather for the LM
// head. Activations are bf16 with fp32 math inside, rounded where Hugging Face's bf16 Llama rounds
// (so the engine follows transformers, not an fp32 model); the CPU references are in
// engine/cpu/ops.hpp and engine/rope.hpp, checked in tests/engine/cuda/layer_kernels_test.cpp.
// Every launcher runs on `stream`, allocates nothing and never synchronises (graph-capturable).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/attention.hpp"

namespace inferlab::engine::cuda {

using bf16 = __nv_bfloat16;

// out[t, :] = table[ids[t], :].
void embedding_gather(const bf16* table, const int32_t* ids, int tokens, int hidden, bf16* out,
                      cudaStream_t stream);

// HF LlamaRMSNorm: n = bf16(x · rsqrt(mean(x²) + eps)) in fp32, out = bf16(weight · n).
void rms_norm(const bf16* x, const bf16* weight, int rows, int hidden, float eps, bf16* out,
              cudaStream_t stream);

// residual = bf16(residual + delta) (the decoder's skip connection), then
// out = rms_norm(residual): one read of each input, one write of each output.
void add_rms_norm(bf16* residual, const bf16* delta, const bf16* weight, int rows, int hidden,
                  float eps, bf16* out, cudaStream_t stream);

// Qwen3's q_norm/k_norm: each query head and each key head of the fused QKV output
// [tokens, (num_heads + 2 num_kv_heads) · head_dim] RMS-normalised over its head_dim values in
// place, with q_weight or k_weight [head_dim], rounded as rms_norm. head_dim <= 256.
void head_rms_norm(bf16* qkv, int tokens, int num_heads, int num_kv_heads, int head_dim,
                   const bf16* q_weight, const bf16* k_weight, float eps, cudaStream_t stream);

// Rotary embedding (rotate-half form, angle = position · inv_freq[i] in fp32 as transformers
// computes it) applied in place to the query heads of each row of the fused QKV output
// [tokens, (num_heads + 2 num_kv_heads) · head_dim]; the rotated keys and the values go to the
// cache at slot_mapping[t] (layout [slot, kv_head, head_dim]). A quantized cache (int8, fp8)
// gets each (token, KV head) vector of the bf16-rounded key or value quantized by its absolute
// maximum (quantize_row_int8 / quantize_row_e4m3) and its scale written beside it.
void rope_kv_write(bf16* qkv, int tokens, int num_heads, int num_kv_heads, int head_dim,
                   const int32_t* positions, const int32_t* slot_mapping, const float* inv_freq,
                   const KvLayerCache& cache, cudaStream_t stream);

// out[t, i] = bf16(bf16(silu(g)) · u) with g = gate_up[t, i], u = gate_up[t, inter + i]
// (the fused gate/up GEMM's two halves, read in place).
void silu_mul_halves(const bf16* gate_up, int tokens, int inter, bf16* out, cudaStream_t stream);

// out[r, :] = x[rows[r], :].
void gather_rows(const bf16* x, const int32_t* rows, int count, int hidden, bf16* out,
                 cudaStream_t stream);

}  // namespace inferlab::engine::cuda
