#include "engine/cuda/device_weights.hpp"

#include <algorithm>
#include <deque>
#include <future>
#include <stdexcept>
#include <thread>

#include "engine/quant/quantize.hpp"

namespace inferlab::engine::cuda {

namespace {

// Every tensor starts on a 256-byte boundary so the kernels' 16-byte loads and cuBLASLt stay
// aligned.
constexpr int64_t kAlignBytes = 256;

int64_t align(int64_t bytes) {
  return (bytes + kAlignBytes - 1) / kAlignBytes * kAlignBytes;
}

// Which fused projection a spec belongs to, and at which row of it.
enum class Fused { none, qkv, o, gate_up, down, lm_head };

struct Part {
  Fused matrix = Fused::none;
  int64_t first_row = 0;
};

Part part_of(const WeightSpec& spec, const ModelConfig& m) {
  switch (spec.role) {
    case WeightRole::q_proj:
      return {Fused::qkv, 0};
    case WeightRole::k_proj:
      return {Fused::qkv, m.q_dim()};
    case WeightRole::v_proj:
      return {Fused::qkv, m.q_dim() + m.kv_dim()};
    case WeightRole::o_proj:
      return {Fused::o, 0};
    case WeightRole::gate_proj:
      return {Fused::gate_up, 0};
    case WeightRole::up_proj:
      return {Fused::gate_up, m.intermediate_size};
    case WeightRole::down_proj:
      return {Fused::down, 0};
    case WeightRole::lm_head:
      return {Fused::lm_head, 0};
    default:
      return {};
  }
}

// Where one quantized matrix's pieces sit in the quantized arena (byte offsets).
struct QuantPlace {
  int64_t rows = 0, in = 0, group_size = 0;
  int64_t data = 0, scales = 0, zeros = 0;
};

int64_t row_bytes(DType format, int64_t in) {
  return format == DType::int4 ? in / 2 : in;
}
int64_t scale_bytes(DType format) {
  return format == DType::int4 ? 2 : 4;
}

// Byte offsets of every tensor: bf16 ones in the bf16 arena (in bytes too), quantized matrices in
// the quantized arena.
struct Placement {
  std::vector<int64_t> bf16_offset;                     // per spec; -1 for quantized projections
  std::vector<std::vector<QuantPlace>> layer_matrices;  // [layer][Fused::qkv .. down]
  QuantPlace lm_head;
  bool quantized_lm_head = false;
  int64_t bf16_bytes = 0, quantized_bytes = 0;
};

// The tensors to load: the checkpoint's, the LM head's rows `lm_head_rows` (a tensor-parallel
// rank's vocab shard, padded) instead of the vocabulary when > 0.
std::vector<WeightSpec> device_weight_specs(const LlamaConfig& config, int64_t lm_head_rows) {
  std::vector<WeightSpec> specs = llama_weight_specs(config);
  for (WeightSpec& spec : specs) {
    if (spec.role == WeightRole::lm_head && lm_head_rows > 0) spec.shape[0] = lm_head_rows;
  }
  return specs;
}

Placement place(const LlamaConfig& config, const QuantConfig& quant,
                const std::vector<WeightSpec>& specs, int64_t lm_head_rows) {
  const ModelConfig& m = config.model;
  const int64_t hidden = m.hidden_size, inter = m.intermediate_size;
  Placement p;
  p.bf16_offset.assign(specs.size(), -1);
  p.quantized_lm_head = is_quantized_role(WeightRole::lm_head, quant);
  auto claim_bf16 = [&p](int64_t elements) {
    const int64_t at = p.bf16_bytes;
    p.bf16_bytes += align(2 * elements);
    return at;
  };
  auto claim_matrix = [&](int64_t rows, int64_t in) {
    QuantPlace q;
    q.rows = rows;
    q.in = in;
    q.group_size = quant.weights == DType::int4 ? quant.group_for(in) : 0;
    const int64_t groups = q.group_size > 0 ? in / q.group_size : 1;
    auto claim = [&p](int64_t bytes) {
      const int64_t at = p.quantized_bytes;
      p.quantized_bytes += align(bytes);
      return at;
    };
    q.data = claim(rows * row_bytes(quant.weights, in));
    q.scales = claim(rows * groups * scale_bytes(quant.weights));
    q.zeros = quant.weights == DType::int4 ? claim(rows * groups) : 0;
    return q;
  };
  const bool quantized = quant.weights != DType::bf16;
  p.layer_matrices.resize(static_cast<size_t>(m.num_layers));
  if (quantized) {
    for (auto& layer : p.layer_matrices) {
      layer.resize(5);
      layer[static_cast<int>(Fused::qkv)] = claim_matrix(m.q_dim() + 2 * m.kv_dim(), hidden);
      layer[static_cast<int>(Fused::o)] = claim_matrix(hidden, m.q_dim());
      layer[static_cast<int>(Fused::gate_up)] = claim_matrix(2 * inter, hidden);
      layer[static_cast<int>(Fused::down)] = claim_matrix(hidden, inter);
    }
    if (p.quantized_lm_head) p.lm_head = claim_matrix(lm_head_rows, hidden);
  }
  // bf16 tensors; fused blocks first, each part's offset inside its block.
  std::vector<int64_t> qkv(p.layer_matrices.size()), bias(qkv.size()), gu(qkv.size());
  // Mixture of experts: a layer's experts' gate/up blocks, then its down blocks, back to back.
  std::vector<int64_t> experts_gu(qkv.size(), -1), experts_down(qkv.size(), -1);
  const int64_t expert_gu_bytes = 2 * 2 * inter * hidden, expert_down_bytes = 2 * hidden * inter;
  for (size_t i = 0; i < specs.size(); ++i) {
    const WeightSpec& spec = specs[i];
    const auto layer = static_cast<size_t>(std::max<int64_t>(spec.layer, 0));
    if (is_quantized(spec, quant)) continue;
    if (spec.expert >= 0) {
      if (experts_gu[layer] < 0) {
        experts_gu[layer] = claim_bf16(m.num_experts * 2 * inter * hidden);
        experts_down[layer] = claim_bf16(m.num_experts * hidden * inter);
      }
      const int64_t gate_up_at = experts_gu[layer] + spec.expert * expert_gu_bytes;
      if (spec.role == WeightRole::gate_proj) p.bf16_offset[i] = gate_up_at;
      if (spec.role == WeightRole::up_proj) p.bf16_offset[i] = gate_up_at + 2 * inter * hidden;
      if (spec.role == WeightRole::down_proj) {
        p.bf16_offset[i] = experts_down[layer] + spec.expert * expert_down_bytes;
      }
      continue;
    }
    switch (spec.role) {
      case WeightRole::q_proj:
        qkv[layer] = claim_bf16((m.q_dim() + 2 * m.kv_dim()) * hidden);
        p.bf16_offset[i] = qkv[layer];
        break;
      case WeightRole::k_proj:
        p.bf16_offset[i] = qkv[layer] + 2 * m.q_dim() * hidden;
        break;
      case WeightRole::v_proj:
        p.bf16_offset[i] = qkv[layer] + 2 * (m.q_dim() + m.kv_dim()) * hidden;
        break;
      case WeightRole::q_bias:
        bias[layer] = claim_bf16(m.q_dim() + 2 * m.kv_dim());
        p.bf16_offset[i] = bias[layer];
        break;
      case WeightRole::k_bias:
        p.bf16_offset[i] = bias[layer] + 2 * m.q_dim();
        break;
      case WeightRole::v_bias:
        p.bf16_offset[i] = bias[layer] + 2 * (m.q_dim() + m.kv_dim());
        break;
      case WeightRole::gate_proj:
        gu[layer] = claim_bf16(2 * inter * hidden);
        p.bf16_offset[i] = gu[layer];
        break;
      case WeightRole::up_proj:
        p.bf16_offset[i] = gu[layer] + 2 * inter * hidden;
        break;
      default:
        p.bf16_offset[i] = claim_bf16(spec.elements());
        break;
    }
  }
  return p;
}

DeviceMatrix bf16_matrix(const void* data, int64_t out, int64_t in) {
  DeviceMatrix matrix;
  matrix.format = DType::bf16;
  matrix.data = data;
  matrix.out = out;
  matrix.in = in;
  return matrix;
}

DeviceMatrix quantized_matrix(const unsigned char* base, const QuantPlace& q,
                              const QuantConfig& quant) {
  DeviceMatrix matrix;
  matrix.format = quant.weights;
  matrix.input_format = quant.gemm_input_format();
  matrix.data = base + q.data;
  matrix.out = q.rows;
  matrix.in = q.in;
  if (quant.weights == DType::int4) {
    matrix.group_scales = reinterpret_cast<const __half*>(base + q.scales);
    matrix.zeros = base + q.zeros;
    matrix.group_size = q.group_size;
  } else {
    matrix.scales = reinterpret_cast<const float*>(base + q.scales);
  }
  return matrix;
}

// Copies one quantized part (its rows) into its matrix's place, scales converted to the device
// type (fp16 for int4, fp32 otherwise).
void upload_part(DeviceBuffer<unsigned char>& arena, const QuantPlace& q, int64_t first_row,
                 const QuantizedMatrix& part, const std::string& name) {
  if (part.in != q.in || first_row + part.out > q.rows ||
      (part.format == DType::int4 && part.group_size != q.group_size)) {
    throw std::invalid_argument("DeviceWeights: quantized tensor '" + name +
                                "' does not match its place (width, rows or groups)");
  }
  const int64_t groups = part.groups();
  arena.upload(part.data.data(), part.data.size(),
               static_cast<size_t>(q.data + first_row * row_bytes(part.format, part.in)));
  if (part.format == DType::int4) {
    std::vector<uint16_t> halves(part.scales.size());
    for (size_t i = 0; i < halves.size(); ++i) halves[i] = float_to_fp16(part.scales[i]);
    arena.upload(reinterpret_cast<const unsigned char*>(halves.data()), 2 * halves.size(),
                 static_cast<size_t>(q.scales + first_row * groups * 2));
    arena.upload(part.zeros.data(), part.zeros.size(),
                 static_cast<size_t>(q.zeros + first_row * groups));
  } else {
    arena.upload(reinterpret_cast<const unsigned char*>(part.scales.data()), 4 * part.scales.size(),
                 static_cast<size_t>(q.scales + first_row * 4));
  }
}

}  // namespace

DeviceMatrix expert_matrix(const __nv_bfloat16* experts, int64_t out, int64_t in, int64_t expert) {
  return bf16_matrix(experts + expert * out * in, out, in);
}

double matrix_bytes(const DeviceMatrix& m) {
  const double rows = static_cast<double>(m.out), in = static_cast<double>(m.in);
  switch (m.format) {
    case DType::int4: {
      const double groups = in / static_cast<double>(m.group_size);
      return rows * (in / 2 + 3 * groups);  // nibbles, fp16 scale and a zero byte per group
    }
    case DType::int8:
    case DType::fp8:
      return rows * (in + 4);
    default:
      return 2 * rows * in;
  }
}

int64_t DeviceWeights::bytes_for(const LlamaConfig& config, const QuantConfig& quant,
                                 int64_t lm_head_rows) {
  if (lm_head_rows <= 0) lm_head_rows = config.model.vocab_size;
  const Placement p = place(config, quant, device_weight_specs(config, lm_head_rows), lm_head_rows);
  return p.bf16_bytes + p.quantized_bytes;
}

DeviceWeights::DeviceWeights(const LlamaConfig& config, const QuantConfig& quant,
                             const WeightLoader& loader, int64_t lm_head_rows) {
  const ModelConfig& m = config.model;
  if (lm_head_rows <= 0) lm_head_rows = m.vocab_size;
  const auto specs = device_weight_specs(config, lm_head_rows);
  const Placement placement = place(config, quant, specs, lm_head_rows);
  arena_ = DeviceBuffer<__nv_bfloat16>(static_cast<size_t>(placement.bf16_bytes / 2));
  quantized_ = DeviceBuffer<unsigned char>(static_cast<size_t>(placement.quantized_bytes));
  layers.resize(static_cast<size_t>(m.num_layers));
  const bool tied_quantized_head = m.tie_word_embeddings && placement.quantized_lm_head;

  // Tensors are read (and quantized) on several threads, a few ahead of the copy, and copied in
  // order. A tied LM head that is quantized is quantized from the embedding's bits.
  const size_t ahead = std::max(2u, std::min(16u, std::thread::hardware_concurrency()));
  std::deque<std::future<LoadedWeight>> pending;
  size_t next_to_start = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    while (next_to_start < specs.size() && pending.size() < ahead) {
      const WeightSpec* spec = &specs[next_to_start++];
      pending.push_back(std::async(std::launch::async, [&, spec] {
        LoadedWeight loaded = loader(*spec);
        if (spec->role == WeightRole::embed_tokens && tied_quantized_head) {
          loaded.quantized = quantize_bf16_matrix(loaded.bf16, m.vocab_size, m.hidden_size, quant);
        }
        return loaded;
      }));
    }
    LoadedWeight loaded = pending.front().get();
    pending.pop_front();
    const WeightSpec& spec = specs[i];
    const Part part = part_of(spec, m);
    if (loaded.quantized && (part.matrix != Fused::none || tied_quantized_head)) {
      const QuantPlace& q =
          spec.role == WeightRole::lm_head || spec.role == WeightRole::embed_tokens
              ? placement.lm_head
              : placement
                    .layer_matrices[static_cast<size_t>(spec.layer)][static_cast<int>(part.matrix)];
      upload_part(quantized_, q, part.first_row, *loaded.quantized, spec.name);
    }
    if (placement.bf16_offset[i] < 0) continue;
    if (static_cast<int64_t>(loaded.bf16.size()) != spec.elements()) {
      throw std::invalid_argument("DeviceWeights: tensor '" + spec.name + "' has " +
                                  std::to_string(loaded.bf16.size()) + " bf16 values, expected " +
                                  std::to_string(spec.elements()));
    }
    arena_.upload(reinterpret_cast<const __nv_bfloat16*>(loaded.bf16.data()), loaded.bf16.size(),
                  static_cast<size_t>(placement.bf16_offset[i] / 2));
  }

  const auto* base = reinterpret_cast<const unsigned char*>(arena_.data());
  const int64_t hidden = m.hidden_size, inter = m.intermediate_size;
  const int64_t qkv_rows = m.q_dim() + 2 * m.kv_dim();
  for (size_t i = 0; i < specs.size(); ++i) {
    const WeightSpec& spec = specs[i];
    if (placement.bf16_offset[i] < 0) continue;
    const auto* at = reinterpret_cast<const __nv_bfloat16*>(base + placement.bf16_offset[i]);
    DeviceLayer* layer = spec.layer >= 0 ? &layers[static_cast<size_t>(spec.layer)] : nullptr;
    if (spec.expert == 0 && spec.role == WeightRole::gate_proj) layer->experts_gate_up = at;
    if (spec.expert == 0 && spec.role == WeightRole::down_proj) layer->experts_down = at;
    if (spec.expert >= 0) continue;
    switch (spec.role) {
      case WeightRole::embed_tokens:
        embed_tokens = at;
        break;
      case WeightRole::final_norm:
        final_norm = at;
        break;
      case WeightRole::lm_head:
        lm_head = bf16_matrix(at, lm_head_rows, hidden);
        break;
      case WeightRole::input_layernorm:
        layer->input_norm = at;
        break;
      case WeightRole::q_proj:
        layer->qkv = bf16_matrix(at, qkv_rows, hidden);
        break;
      case WeightRole::q_bias:
        layer->qkv_bias = at;
        break;
      case WeightRole::o_proj:
        layer->o_proj = bf16_matrix(at, hidden, m.q_dim());
        break;
      case WeightRole::post_attention_layernorm:
        layer->post_norm = at;
        break;
      case WeightRole::q_norm:
        layer->q_norm = at;
        break;
      case WeightRole::k_norm:
        layer->k_norm = at;
        break;
      case WeightRole::router:
        layer->router = at;
        break;
      case WeightRole::gate_proj:
        layer->gate_up = bf16_matrix(at, 2 * inter, hidden);
        break;
      case WeightRole::down_proj:
        layer->down = bf16_matrix(at, hidden, inter);
        break;
      default:
        break;  // k/v and up live inside the fused blocks
    }
  }
  if (quant.weights != DType::bf16) {
    for (size_t l = 0; l < layers.size(); ++l) {
      const auto& places = placement.layer_matrices[l];
      layers[l].qkv = quantized_matrix(quantized_.data(), places[int(Fused::qkv)], quant);
      layers[l].o_proj = quantized_matrix(quantized_.data(), places[int(Fused::o)], quant);
      layers[l].gate_up = quantized_matrix(quantized_.data(), places[int(Fused::gate_up)], quant);
      layers[l].down = quantized_matrix(quantized_.data(), places[int(Fused::down)], quant);
    }
  }
  if (placement.quantized_lm_head) {
    lm_head = quantized_matrix(quantized_.data(), placement.lm_head, quant);
  } else if (lm_head.data == nullptr) {
    lm_head = bf16_matrix(embed_tokens, m.vocab_size, hidden);  // tied
  }
}

}  // namespace inferlab::engine::cuda
