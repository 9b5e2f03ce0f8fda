#include "probe/projection_shapes.hpp"

namespace inferlab::probe {

namespace {
// Projections from a layer's widths: hidden, query, key/value (each of K and V), intermediate.
std::vector<ProjectionShape> projections(const std::string& model, long long hidden,
                                         long long q_dim, long long kv_dim,
                                         long long intermediate) {
  return {{model, "qkv_proj", q_dim + 2 * kv_dim, hidden},
          {model, "o_proj", hidden, q_dim},
          {model, "gate_up_proj", 2 * intermediate, hidden},
          {model, "down_proj", hidden, intermediate}};
}

struct LayerWidths {
  const char* model;
  long long hidden, q_dim, kv_dim, intermediate;
  bool in_quick_sweep;
};

// Published config.json widths (q_dim = heads x head_dim, kv_dim = kv heads x head_dim).
constexpr LayerWidths kSweptModels[] = {
    {"llama-3.2-1b", 2048, 2048, 512, 8192, true}, {"llama-3.2-3b", 3072, 3072, 1024, 8192, false},
    {"llama-3-8b", 4096, 4096, 1024, 14336, true}, {"llama-3-70b", 8192, 8192, 1024, 28672, true},
    {"qwen2.5-7b", 3584, 3584, 512, 18944, false},
};
}  // namespace

std::vector<ProjectionShape> model_projections(const std::string& model_name,
                                               const ModelConfig& model) {
  return projections(model_name, model.hidden_size, model.q_dim(), model.kv_dim(),
                     model.intermediate_size);
}

std::vector<ProjectionShape> default_projections(bool quick) {
  std::vector<ProjectionShape> shapes;
  for (const LayerWidths& m : kSweptModels) {
    if (quick && !m.in_quick_sweep) continue;
    auto layer = projections(m.model, m.hidden, m.q_dim, m.kv_dim, m.intermediate);
    shapes.insert(shapes.end(), layer.begin(), layer.end());
  }
  return shapes;
}

}  // namespace inferlab::probe
