#include "engine/cpu/gptq_calibration.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "engine/cpu/cpu_backend.hpp"
#include "util/error.hpp"

namespace inferlab::engine {

namespace {

class HessianSink final : public ProjectionInputSink {
 public:
  explicit HessianSink(GptqHessians& hessians) : hessians_(hessians) {}
  void add(int64_t layer, ProjectionInput which, const float* rows, int64_t count,
           int64_t width) override {
    InputHessian& h = hessians_.layers.at(static_cast<size_t>(layer))[static_cast<size_t>(which)];
    if (h.width() != width) throw std::logic_error("GPTQ calibration: an input of another width");
    h.add(rows, count);
  }

 private:
  GptqHessians& hessians_;
};

}  // namespace

int64_t gptq_hessian_bytes(const LlamaConfig& config) {
  const ModelConfig& m = config.model;
  const int64_t per_layer = 2 * m.hidden_size * m.hidden_size + m.q_dim() * m.q_dim() +
                            m.intermediate_size * m.intermediate_size;
  return 8 * per_layer * m.num_layers;
}

GptqHessians gptq_hessians(LlamaModel model, std::span<const int32_t> tokens, int64_t window,
                           int64_t max_bytes) {
  const ModelConfig& m = model.config.model;
  if (tokens.empty()) throw InputError("GPTQ calibration: no calibration tokens");
  const int64_t context = m.max_position_embeddings > 0 ? m.max_position_embeddings : window;
  if (window < 2 || window > context) {
    throw InputError(fmt::format(
        "GPTQ calibration: a window of {} tokens is outside [2, the model's context of {}]", window,
        context));
  }
  const int64_t bytes = gptq_hessian_bytes(model.config);
  if (bytes > max_bytes) {
    throw InputError(fmt::format(
        "GPTQ calibration: {}'s Hessians take {:.1f} GB in memory (every layer's, in double), "
        "over the {:.1f} GB this runs with",
        m.name, static_cast<double>(bytes) / 1e9, static_cast<double>(max_bytes) / 1e9));
  }
  GptqHessians hessians;
  hessians.layers.resize(static_cast<size_t>(m.num_layers));
  for (auto& layer : hessians.layers) {
    layer = {InputHessian(m.hidden_size), InputHessian(m.q_dim()), InputHessian(m.hidden_size),
             InputHessian(m.intermediate_size)};
  }
  const int64_t span = std::min<int64_t>(window, static_cast<int64_t>(tokens.size()));
  auto backend = make_cpu_backend(std::move(model), span);
  HessianSink sink(hessians);
  backend->collect_projection_inputs(&sink);
  BlockTable table;
  for (int64_t b = 0; b < backend->kv_layout().blocks_for(span); ++b) {
    table.push_back(static_cast<int32_t>(b));
  }
  for (size_t first = 0; first < tokens.size(); first += static_cast<size_t>(span)) {
    const size_t count = std::min(tokens.size() - first, static_cast<size_t>(span));
    SequenceChunk chunk;
    chunk.tokens.assign(tokens.begin() + static_cast<std::ptrdiff_t>(first),
                        tokens.begin() + static_cast<std::ptrdiff_t>(first + count));
    chunk.block_table = table;
    backend->forward({{chunk}});
  }
  backend->collect_projection_inputs(nullptr);
  hessians.tokens = static_cast<int64_t>(tokens.size());
  return hessians;
}

}  // namespace inferlab::engine
