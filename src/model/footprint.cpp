#include "model/footprint.hpp"

namespace inferlab {

double weight_bytes_per_device(const ModelConfig& m, const Precision& p, const ShardDims& s) {
  const double fb = dtype_bytes(p.float_dtype);
  double linear_bytes_per_weight = dtype_bytes(p.weights);
  if (p.weights == DType::int4 || p.weights == DType::int8) {
    if (!is_8bit_or_less(p.activations)) {
      linear_bytes_per_weight += 2.0 / static_cast<double>(p.quant_group_size);
    }
  }
  const double h = static_cast<double>(s.hidden);
  const double q_dim = static_cast<double>(s.q_heads * s.head_dim);
  const double kv_dim = static_cast<double>(s.kv_heads * s.head_dim);
  const double inter = static_cast<double>(s.intermediate);
  double attention = h * (q_dim + 2.0 * kv_dim) + q_dim * h;
  double experts = m.is_moe() ? static_cast<double>(m.num_experts) : 1.0;
  // GPT family: two MLP matrices (no gate), biases on every linear layer, LayerNorm biases.
  double mlp = experts * (m.gpt_style ? 2.0 : 3.0) * h * inter;
  double per_layer =
      (attention + mlp) * linear_bytes_per_weight + (m.gpt_style ? 4.0 : 2.0) * h * fb;
  if (m.qkv_bias) per_layer += (q_dim + 2.0 * kv_dim) * fb;
  if (m.gpt_style) per_layer += (2.0 * h + inter) * fb;  // o_proj, fc_in, fc_out biases
  if (m.is_moe()) per_layer += h * static_cast<double>(m.num_experts) * fb;  // router
  double vocab_rows = static_cast<double>(s.vocab) * h * fb;
  if (m.gpt_style) vocab_rows += static_cast<double>(m.max_position_embeddings) * h * fb;
  double head = m.tie_word_embeddings ? 0.0 : vocab_rows;
  return vocab_rows + static_cast<double>(m.num_layers) * per_layer + h * fb + head;
}

double kv_bytes_per_token(const ModelConfig& m, DType kv_dtype, const ShardDims& s) {
  return 2.0 * static_cast<double>(m.num_layers * s.kv_heads * s.head_dim) * dtype_bytes(kv_dtype);
}

double dense_flops_per_token(const ModelConfig& m) {
  return 2.0 * static_cast<double>(m.active_params_per_token());
}

}  // namespace inferlab
