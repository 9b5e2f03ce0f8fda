#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/op.hpp"

namespace inferlab {

// One operator measured on a GPU (validation/torch_reference.py output, "ops" list).
struct MeasuredOp {
  Op op;
  std::string label;  // e.g. "linear m=512 n=4096 k=4096"
  double measured_s = 0.0;
  // In the held-out split fixed by the measuring script (validation/torch_reference.py
  // split_of; probe sweep rows of Llama 3.2 3B shapes): never used to fit, only to check.
  bool held_out = false;
};

// Turns each measured row into the Op that models what PyTorch ran (eager SiLU x mul is two
// kernels and five passes, for instance). Unknown rows are an InputError.
std::vector<MeasuredOp> measured_ops_from_reference(const nlohmann::json& reference,
                                                    const std::string& context);

// The fastest measurement: what an isolated, event-timed launch costs with (almost) no work.
// Fit and validation both use it as the fixed cost of a single timed op. 0 for an empty list.
double fastest_measured_s(const std::vector<MeasuredOp>& measured);

// Probe sweep rows of these models are held out (the shapes torch_reference.py holds out).
inline constexpr const char* kHeldOutProbeModel = "llama-3.2-3b";

// The probe's own sweeps in a hardware profile: bf16 GEMMs (sweeps.gemm) and its RMSNorm, add and
// SiLU x mul kernels (sweeps.llm_kernels; its softmax and RoPE are left out, see the .cpp).
std::vector<MeasuredOp> measured_ops_from_profile(const nlohmann::json& profile,
                                                  const std::string& context);

}  // namespace inferlab
