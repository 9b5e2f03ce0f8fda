#pragma once
// The GEMM shapes the probe sweeps: the projections of a decoder layer. (C++17: the CUDA
// sources include it.)
#include <string>
#include <vector>

#include "model/model_config.hpp"

namespace inferlab::probe {

// One projection: y[m, n_out] = x[m, k] W^T, named after its model and role.
struct ProjectionShape {
  std::string model, name;
  long long n_out = 0, k = 0;
};

// Fused QKV, O, fused gate/up and down of a dense model at tensor parallelism 1.
std::vector<ProjectionShape> model_projections(const std::string& model_name,
                                               const ModelConfig& model);

// The probe's own sweep, needing no model file: Llama 3.2 1B, Llama 3 8B and Llama 3 70B, plus
// Llama 3.2 3B and Qwen2.5 7B unless `quick` (their published shapes; a test checks them
// against data/models/).
std::vector<ProjectionShape> default_projections(bool quick);

}  // namespace inferlab::probe
