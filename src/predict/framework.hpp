#pragma once
#include <string>
#include <string_view>

#include "model/step_graph.hpp"

namespace inferlab {

// Which serving stack runs the model; it decides which operators are separate kernels.
enum class Framework { pytorch, vllm, inferlab };
Framework parse_framework(std::string_view name);  // throws InputError
std::string_view framework_name(Framework framework);

// PyTorch eager (Hugging Face style): separate q/k/v and gate/up GEMMs, rotate-half RoPE as
// five kernels per tensor, K and V cache writes, SiLU and mul, residual adds and RMSNorm as
// separate kernels. vLLM: fused QKV and gate/up GEMMs, fused residual+RMSNorm, fused SiLU x
// mul, RoPE fused with the KV write, paged FlashAttention. inferlab: this project's engine
// (src/engine/cuda), launched from C++ without Python: for the dense Llama family its own
// kernel list (model/engine_blocks.hpp) as its switches set it (`gemv`: few-row projections on
// its GEMV kernels; `fusion`: norm, SiLU x mul and residual adds fused into those GEMVs; naive
// attention when flash_attention is off); other families get the vLLM list. gemv and fusion
// mean nothing to the other frameworks.
KernelPlan kernel_plan(Framework framework, bool flash_attention, bool gemv = true,
                       bool fusion = true);

// A plan with the projections laid out as a measured step row names them ("layout"): "" or
// "separate" keeps `plan`; "fused_qkv_gate_up" (gpt-fast) runs one QKV and one gate/up GEMM,
// whose output halves an unfused SiLU x mul then reads as strided views. InputError otherwise.
KernelPlan with_projection_layout(KernelPlan plan, std::string_view layout);

// Host-side cost of launching work, measured (data/host_overhead.json).
struct HostOverhead {
  double eager_per_kernel_s = 0.0;  // Python + dispatcher + launch, per kernel, no CUDA graph
  double graph_launch_s = 0.0;      // one cudaGraphLaunch per step
  // PyTorch eager, measured on a plain Llama with negligible GPU work: host time to issue one
  // decoder layer (Python, views, dispatch and its launches) and the rest of a step
  // (embedding, final norm, LM head, argmax). 0: not measured, eager_per_kernel_s is used.
  double pytorch_layer_s = 0.0;
  double pytorch_step_base_s = 0.0;
  // The engine's C++ host time per kernel launched eagerly (no CUDA graph); 0: not measured,
  // eager_per_kernel_s is used.
  double engine_per_kernel_s = 0.0;
  std::string source;
};
HostOverhead load_host_overhead(const std::string& path = "");

}  // namespace inferlab
