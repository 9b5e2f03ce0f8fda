#pragma once
#include <cstdint>
#include <string_view>

#include "util/dtype.hpp"

namespace inferlab {

enum class Phase { prefill, decode };

// What an operator computes. The cost models price by kind and shape.
enum class OpKind {
  embedding,
  rmsnorm,
  add_rmsnorm,    // residual add fused into the following RMSNorm
  layernorm,      // GPT family: mean and variance, scale and bias
  add_layernorm,  // residual add fused into the following LayerNorm
  gemm,           // projections, LM head, MoE router
  moe_gemm,       // grouped expert GEMMs
  rope,
  kv_write,
  rope_kv_write,
  attention,          // fused (FlashAttention-style): scores never reach memory
  attention_scores,   // unfused Q K^T, scores written to memory
  attention_softmax,  // unfused masked softmax over the score matrix
  attention_context,  // unfused P V
  repeat_kv,          // GQA heads expanded in memory by eager frameworks without fused attention
  add,
  silu,
  mul,
  silu_mul,
  gelu,  // GPT family MLP activation (tanh approximation)
  sampling,
  all_reduce,
  all_gather,
  dequantize,  // quantized weights (or int32 GEMM accumulators) expanded to 16-bit floats
  quantize,    // GEMM input rows quantized to 8 bits (fp8 weights, W8A8), a scale per row
};
std::string_view op_kind_name(OpKind kind);

// Where the op sits in one step: before the layers, in each layer, after them. The host
// overhead model replays kernels in this order.
enum class Scope { pre_layers, per_layer, post_layers };

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  int64_t groups = 1;  // independent GEMMs of this shape (MoE experts, batched heads)
};

struct AttentionShape {
  int64_t batch = 0, q_heads = 0, kv_heads = 0, head_dim = 0;
  int64_t q_len = 0;   // new tokens per sequence
  int64_t kv_len = 0;  // tokens attended per sequence, new ones included
  bool causal = false;
};

// Which of a framework's reported kernel classes an op belongs to, how it runs there and in which
// format: the inferlab engine reports GPU time per logical op ("gemm_qkv", "norm", ...; every
// kernel launched for it, e.g. a weight dequantization before its GEMM), and its calibration
// prices each (class, path, format). Empty strings: no such class (other frameworks).
struct KernelTag {
  const char* kernel_class = "";  // embedding, norm, gemm_qkv, rope_kv_write, attention, ...
  const char* path = "";          // gemv, gemv_fused, gemm, flash_prefill, flash_decode, naive, ...
  const char* format = "";        // the format that picks the kernel: bf16, int8, int4, fp8, w8a8
  // Profile marks per instance: the engine times each call of a class (one event after it), so
  // the op whose kernel ends a call has 1 and kernels launched earlier in the call have 0.
  int marks = 1;
};

// One operator of one step on one device, with its work. FLOPs and bytes are per instance;
// `count` instances run per step (the layer count for per-layer ops).
struct Op {
  const char* name = "";  // static string: ops are built millions of times in sweeps
  OpKind kind = OpKind::add;
  Scope scope = Scope::per_layer;
  int64_t count = 1;
  int kernels = 1;  // kernel launches per instance
  DType compute_dtype = DType::bf16;
  GemmShape gemm{};
  AttentionShape attention{};
  double flops = 0.0;
  double weight_bytes = 0.0;      // parameters read
  double activation_bytes = 0.0;  // activations read and written
  double kv_bytes = 0.0;          // KV cache read and written
  double comm_bytes = 0.0;        // payload of a collective
  int comm_devices = 1;
  // Row-wise reductions (RMSNorm, softmax, sampling): rows reduced independently, each of
  // `cols` elements. Cost models use them to price one CTA per row when rows are few.
  int64_t rows = 0, cols = 0;
  bool context_dependent = false;  // its cost changes with the decode context length
  // An elementwise op that reads an input through a strided view (one half of a fused gate/up
  // output, rows 2 x intermediate apart): PyTorch cannot vectorize it and runs its generic
  // elementwise kernel, 1.6-1.7x slower than on contiguous tensors (H100, 2026-11-23).
  bool strided_input = false;
  // Where the engine's CTAs each stream their share in order, too few to fill the GPU or too
  // slow alone to reach its bandwidth (naive attention's P·V walks a whole context per (token,
  // head)): the CTAs launched and the bytes each reads. A grid without bytes (the tiled prefill
  // attention) is one whose CTAs each carry a fixed cost. 0 when not modelled.
  int64_t grid_ctas = 0;
  double bytes_per_cta = 0.0;
  KernelTag tag{};
  // Launched by the host one kernel at a time rather than replayed from a CUDA graph: set by
  // the step predictor from the step's launch mode. The engine's collectives, measured both
  // ways, are priced by it.
  bool eager_launch = false;
  // Launched with programmatic dependent launch and reading before its grid wait (the engine's
  // int4 streaming GEMV, its streamed flash decode): in a CUDA graph its start overlaps the
  // previous kernel's end, which its profiled (eager, event after each call) time does not show;
  // the engine's calibration prices the overlap per launch.
  bool programmatic_launch = false;

  double bytes() const { return weight_bytes + activation_bytes + kv_bytes; }
};

}  // namespace inferlab
