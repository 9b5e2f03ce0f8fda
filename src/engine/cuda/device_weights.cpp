#include "engine/cuda/device_weights.hpp"

#include <algorithm>
#include <deque>
#include <future>
#include <stdexcept>
#include <thread>

namespace inferlab::engine::cuda {

namespace {

// Where each tensor of llama_weight_specs goes in the arena, in elements. Every tensor starts
// on a 256-byte boundary (128 bf16) so the kernels' 16-byte loads and cuBLASLt stay aligned.
struct Placement {
  std::vector<int64_t> offset;  // per spec
  int64_t total = 0;
};

int64_t aligned(int64_t elements) {
  return (elements + 127) / 128 * 128;
}

Placement place(const LlamaConfig& config, const std::vector<WeightSpec>& specs) {
  const ModelConfig& m = config.model;
  const int64_t hidden = m.hidden_size, q_dim = m.q_dim(), kv_dim = m.kv_dim();
  const int64_t inter = m.intermediate_size;
  Placement placement;
  placement.offset.assign(specs.size(), 0);
  int64_t next = 0;
  auto claim = [&next](int64_t elements) {
    const int64_t at = next;
    next += aligned(elements);
    return at;
  };
  // Per layer: the fused blocks first, then each spec's offset inside its block.
  std::vector<int64_t> qkv(static_cast<size_t>(m.num_layers)), bias(qkv.size()), gu(qkv.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const WeightSpec& spec = specs[i];
    const auto layer = static_cast<size_t>(std::max<int64_t>(spec.layer, 0));
    switch (spec.role) {
      case WeightRole::q_proj:
        qkv[layer] = claim((q_dim + 2 * kv_dim) * hidden);
        placement.offset[i] = qkv[layer];
        break;
      case WeightRole::k_proj:
        placement.offset[i] = qkv[layer] + q_dim * hidden;
        break;
      case WeightRole::v_proj:
        placement.offset[i] = qkv[layer] + (q_dim + kv_dim) * hidden;
        break;
      case WeightRole::q_bias:
        bias[layer] = claim(q_dim + 2 * kv_dim);
        placement.offset[i] = bias[layer];
        break;
      case WeightRole::k_bias:
        placement.offset[i] = bias[layer] + q_dim;
        break;
      case WeightRole::v_bias:
        placement.offset[i] = bias[layer] + q_dim + kv_dim;
        break;
      case WeightRole::gate_proj:
        gu[layer] = claim(2 * inter * hidden);
        placement.offset[i] = gu[layer];
        break;
      case WeightRole::up_proj:
        placement.offset[i] = gu[layer] + inter * hidden;
        break;
      default:
        placement.offset[i] = claim(spec.elements());
        break;
    }
  }
  placement.total = next;
  return placement;
}

}  // namespace

int64_t DeviceWeights::bytes_for(const LlamaConfig& config) {
  return 2 * place(config, llama_weight_specs(config)).total;
}

DeviceWeights::DeviceWeights(const LlamaConfig& config, const TensorSource& source) {
  const auto specs = llama_weight_specs(config);
  const Placement placement = place(config, specs);
  arena_ = DeviceBuffer<__nv_bfloat16>(static_cast<size_t>(placement.total));
  layers.resize(static_cast<size_t>(config.model.num_layers));

  // Tensors are read (decoded, or drawn for random weights) on several threads, a few ahead of
  // the copy, and copied in order.
  const size_t ahead = std::max(2u, std::min(16u, std::thread::hardware_concurrency()));
  std::deque<std::future<std::vector<uint16_t>>> pending;
  size_t next_to_start = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    while (next_to_start < specs.size() && pending.size() < ahead) {
      const WeightSpec* spec = &specs[next_to_start++];
      pending.push_back(std::async(std::launch::async, [&source, spec] { return source(*spec); }));
    }
    std::vector<uint16_t> bits = pending.front().get();
    pending.pop_front();
    if (static_cast<int64_t>(bits.size()) != specs[i].elements()) {
      throw std::invalid_argument("DeviceWeights: tensor '" + specs[i].name + "' has " +
                                  std::to_string(bits.size()) + " values, expected " +
                                  std::to_string(specs[i].elements()));
    }
    arena_.upload(reinterpret_cast<const __nv_bfloat16*>(bits.data()), bits.size(),
                  static_cast<size_t>(placement.offset[i]));
  }

  const __nv_bfloat16* base = arena_.data();
  for (size_t i = 0; i < specs.size(); ++i) {
    const WeightSpec& spec = specs[i];
    const __nv_bfloat16* at = base + placement.offset[i];
    DeviceLayer* layer = spec.layer >= 0 ? &layers[static_cast<size_t>(spec.layer)] : nullptr;
    switch (spec.role) {
      case WeightRole::embed_tokens:
        embed_tokens = at;
        break;
      case WeightRole::final_norm:
        final_norm = at;
        break;
      case WeightRole::lm_head:
        lm_head = at;
        break;
      case WeightRole::input_layernorm:
        layer->input_norm = at;
        break;
      case WeightRole::q_proj:
        layer->qkv = at;
        break;
      case WeightRole::q_bias:
        layer->qkv_bias = at;
        break;
      case WeightRole::o_proj:
        layer->o_proj = at;
        break;
      case WeightRole::post_attention_layernorm:
        layer->post_norm = at;
        break;
      case WeightRole::gate_proj:
        layer->gate_up = at;
        break;
      case WeightRole::down_proj:
        layer->down = at;
        break;
      default:
        break;  // k/v and up live inside the fused blocks
    }
  }
  if (lm_head == nullptr) lm_head = embed_tokens;
}

}  // namespace inferlab::engine::cuda
