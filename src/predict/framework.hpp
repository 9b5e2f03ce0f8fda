#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "hw/host_profile.hpp"
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

// Host-side cost of launching work: today's constants (data/host_overhead.json, measured on the
// H100 host on 2026-11-22), or derived from a host measurement by host_overhead_for.
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
  // From a host measurement (host_overhead_for; 0 otherwise): PyTorch's host time per
  // Python-level op without its launch (Python, argument parsing, dispatcher), and per kernel
  // launch. When dispatch_s > 0 PyTorch's eager steps are priced by the host rule
  // (pytorch_eager_host) in place of pytorch_layer_s and pytorch_step_base_s.
  double dispatch_s = 0.0;
  double launch_s = 0.0;
  // The rule's residual constants, dimensionless (data/host_overhead.json "rule"): Python-level
  // dispatches of one decoder layer and of the rest of a step, in units of dispatch_s.
  double pytorch_layer_dispatches = 0.0;
  double pytorch_step_base_dispatches = 0.0;
  // Turns the probe's Python-free CPU figure into dispatch_s where a host has no PyTorch
  // measurement (0: unknown, such a host keeps today's constants).
  double dispatch_per_cpu_dispatch = 0.0;
  std::string source;       // where the constants come from
  std::string host_source;  // which host measurement they were derived from, or why none
};
// Today's constants and the rule's (data/host_overhead.json or `path`), not derived from any
// host measurement.
HostOverhead load_host_overhead(const std::string& path = "");

// The host rule: from a host's measured launch and dispatch costs (HostProfile), the constants
// priced. dispatch_s = torch_op_s - launch_s (the PyTorch op's time less its launch), or
// dispatch_per_cpu_dispatch x cpu_dispatch_s where the host has no PyTorch figure;
// launch_s, graph_launch_s measured; eager_per_kernel_s = dispatch_s + launch_s (one op per
// kernel, for frameworks without a per-layer rule). The engine's per-kernel constant is kept.
// nullopt when the host lacks the figures (launch_s and a dispatch cost).
std::optional<HostOverhead> derive_host_overhead(const HostOverhead& constants,
                                                 const HostProfile& host);

// What predictions on `hardware` use: `host` is "auto" (data/hosts/<hardware>.json when
// shipped; otherwise today's constants, host_source saying so: a placeholder, not a
// measurement of that host), "none" (today's constants) or a host file / probe profile
// (InputError when it cannot be derived from).
inline constexpr const char* kHostAuto = "auto";
HostOverhead host_overhead_for(const std::string& hardware, const std::string& host = kHostAuto);

// PyTorch eager host time per kernel inside the decoder layers and outside them, by the rule:
// a layer costs pytorch_layer_dispatches x dispatch_s + its kernels x launch_s, the rest of
// the step pytorch_step_base_dispatches x dispatch_s + its kernels x launch_s, each spread
// evenly over its kernels. nullopt when the host has no rule (dispatch_s or the layer constant
// is 0) or there are no layer kernels.
struct EagerHostPerKernel {
  double layer_s = 0.0, other_s = 0.0;
};
std::optional<EagerHostPerKernel> pytorch_eager_host(const HostOverhead& host, int64_t layers,
                                                     double layer_kernels, double other_kernels);

}  // namespace inferlab
