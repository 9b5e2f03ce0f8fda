#include "engine/cpu/cpu_backend.hpp"

#include <algorithm>
#include <stdexcept>

#include "engine/cpu/moe.hpp"
#include "engine/cpu/ops.hpp"
#include "engine/host_collectives.hpp"
#include "engine/quant/moe_quantization.hpp"
#include "engine/quant/quantize.hpp"
#include "engine/quant/quantized_model.hpp"
#include "engine/rope.hpp"

namespace inferlab::engine {

namespace {

const float* or_null(const std::vector<float>& values) {
  return values.empty() ? nullptr : values.data();
}

// The GEMM input as the quantized paths see it: each row quantized and dequantized per token
// (a copy; `rows` is unchanged when the input format is bf16).
const float* gemm_input(const std::vector<float>& rows, int64_t count, int64_t width, DType format,
                        std::vector<float>& scratch) {
  if (format == DType::bf16) return rows.data();
  scratch.assign(rows.begin(), rows.begin() + count * width);
  for (int64_t r = 0; r < count; ++r) fake_quantize_row(&scratch[r * width], width, format);
  return scratch.data();
}

}  // namespace

CpuBackend::CpuBackend(LlamaConfig config, LlamaWeights weights, int64_t block_size,
                       int64_t num_blocks, QuantConfig quant)
    : config_(std::move(config)),
      weights_(std::move(weights)),
      cache_(kv_cache_layout(config_.model, block_size, num_blocks)),
      inv_freq_(rope_inverse_frequencies(config_.rope, config_.model.head_dim)),
      quant_(quant) {
  if (weights_.layers.size() != static_cast<size_t>(config_.model.num_layers)) {
    throw std::invalid_argument("CpuBackend: the weights do not match the config");
  }
  check_moe_quantization(config_, quant_);
}

ForwardResult CpuBackend::forward(const ForwardBatch& batch) {
  validate_batch(batch, config_, cache_.layout());
  ForwardResult result;
  result.vocab_size = config_.model.vocab_size;
  result.first_row.push_back(0);
  const ModelConfig& m = config_.model;
  routed_experts_.assign(m.is_moe() ? static_cast<size_t>(m.num_layers) : 0, {});
  routing_.clear();
  int64_t tokens = 0;
  for (const auto& chunk : batch.sequences) {
    forward_chunk(chunk, result.logits);
    result.first_row.push_back(static_cast<int64_t>(result.logits.size()) / result.vocab_size);
    tokens += static_cast<int64_t>(chunk.tokens.size());
  }
  for (const auto& ids : routed_experts_) routing_.add_layer(ids, tokens, m.num_experts);
  return result;
}

void CpuBackend::forward_chunk(const SequenceChunk& chunk, std::vector<float>& logits) {
  const ModelConfig& m = config_.model;
  const int64_t tokens = static_cast<int64_t>(chunk.tokens.size());
  const int64_t hidden = m.hidden_size, q_dim = m.q_dim(), kv_dim = m.kv_dim();
  const int64_t inter = m.intermediate_size, d = m.head_dim;
  const double eps = config_.rms_norm_eps;
  const auto slots =
      slot_mapping(chunk.block_table, cache_.layout().block_size, chunk.cached_tokens, tokens);
  const cpu::AttentionShape shape{m.num_heads, m.num_kv_heads, d, config_.sliding_window};
  // fp8 weights quantize every GEMM input to E4M3, W8A8 to int8 (per token).
  const DType input = quant_.gemm_input_format();
  std::vector<float> quantized_input;

  auto buffer = [](int64_t n) { return std::vector<float>(static_cast<size_t>(n)); };
  std::vector<float> x = buffer(tokens * hidden), h = buffer(tokens * hidden);
  std::vector<float> q = buffer(tokens * q_dim), k = buffer(tokens * kv_dim);
  std::vector<float> v = buffer(tokens * kv_dim), attn = buffer(tokens * q_dim);
  std::vector<float> proj = buffer(tokens * hidden);
  // (A mixture of experts' MLP keeps its own per-token buffers.)
  const int64_t dense_inter = m.is_moe() ? 0 : inter;
  std::vector<float> gate = buffer(tokens * dense_inter), up = buffer(tokens * dense_inter);

  for (int64_t t = 0; t < tokens; ++t) {
    const float* row = weights_.embed_tokens.data() + int64_t{chunk.tokens[t]} * hidden;
    std::copy(row, row + hidden, x.begin() + t * hidden);
  }

  for (int64_t layer = 0; layer < m.num_layers; ++layer) {
    const LayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
    // Attention block.
    for (int64_t t = 0; t < tokens; ++t) {
      cpu::rms_norm(&x[t * hidden], w.input_layernorm.data(), hidden, eps, &h[t * hidden]);
    }
    if (stats_ != nullptr) {
      merge_column_absmax(h.data(), tokens, hidden,
                          stats_->qkv_input.at(static_cast<size_t>(layer)));
    }
    if (inputs_ != nullptr) inputs_->add(layer, ProjectionInput::qkv, h.data(), tokens, hidden);
    const float* qkv_in = gemm_input(h, tokens, hidden, input, quantized_input);
    cpu::linear(qkv_in, tokens, w.q_proj.data(), or_null(w.q_bias), hidden, q_dim, q.data());
    cpu::linear(qkv_in, tokens, w.k_proj.data(), or_null(w.k_bias), hidden, kv_dim, k.data());
    cpu::linear(qkv_in, tokens, w.v_proj.data(), or_null(w.v_bias), hidden, kv_dim, v.data());
    for (int64_t t = 0; t < tokens; ++t) {
      const int64_t position = chunk.cached_tokens + t;
      // Qwen3 (the family's qk_norm: q_norm/k_norm loaded) normalises each head before RoPE.
      const bool qk_norm = !w.q_norm.empty();
      for (int64_t head = 0; head < m.num_heads; ++head) {
        float* q_head = &q[t * q_dim + head * d];
        if (qk_norm) cpu::rms_norm(q_head, w.q_norm.data(), d, eps, q_head);
        apply_rope(q_head, d, position, inv_freq_);
      }
      for (int64_t head = 0; head < m.num_kv_heads; ++head) {
        float* k_head = &k[t * kv_dim + head * d];
        if (qk_norm) cpu::rms_norm(k_head, w.k_norm.data(), d, eps, k_head);
        apply_rope(k_head, d, position, inv_freq_);
        if (quant_.kv != DType::bf16) {  // the cache holds each head vector quantized
          fake_quantize_row(&k[t * kv_dim + head * d], d, quant_.kv);
          fake_quantize_row(&v[t * kv_dim + head * d], d, quant_.kv);
        }
      }
      std::copy_n(&k[t * kv_dim], kv_dim, cache_.key(layer, slots[static_cast<size_t>(t)]));
      std::copy_n(&v[t * kv_dim], kv_dim, cache_.value(layer, slots[static_cast<size_t>(t)]));
    }
    for (int64_t t = 0; t < tokens; ++t) {
      cpu::paged_attention(&q[t * q_dim], chunk.cached_tokens + t, cache_, layer, chunk.block_table,
                           shape, &attn[t * q_dim]);
    }
    if (inputs_ != nullptr) inputs_->add(layer, ProjectionInput::o, attn.data(), tokens, q_dim);
    cpu::linear(gemm_input(attn, tokens, q_dim, input, quantized_input), tokens, w.o_proj.data(),
                nullptr, q_dim, hidden, proj.data());
    if (group_ != nullptr) group_->all_reduce_sum(rank_, proj);
    for (int64_t i = 0; i < tokens * hidden; ++i) x[i] += proj[i];

    // MLP block.
    for (int64_t t = 0; t < tokens; ++t) {
      cpu::rms_norm(&x[t * hidden], w.post_attention_layernorm.data(), hidden, eps, &h[t * hidden]);
    }
    if (m.is_moe()) {  // (never quantized: check_moe_quantization)
      cpu::moe_mlp(h.data(), tokens, w, config_, proj.data(),
                   &routed_experts_.at(static_cast<size_t>(layer)));
      if (group_ != nullptr) group_->all_reduce_sum(rank_, proj);  // the experts' partial sums
      for (int64_t i = 0; i < tokens * hidden; ++i) x[i] += proj[i];
      continue;
    }
    if (stats_ != nullptr) {
      merge_column_absmax(h.data(), tokens, hidden,
                          stats_->gate_up_input.at(static_cast<size_t>(layer)));
    }
    if (inputs_ != nullptr) {
      inputs_->add(layer, ProjectionInput::gate_up, h.data(), tokens, hidden);
    }
    const float* mlp_in = gemm_input(h, tokens, hidden, input, quantized_input);
    cpu::linear(mlp_in, tokens, w.gate_proj.data(), nullptr, hidden, inter, gate.data());
    cpu::linear(mlp_in, tokens, w.up_proj.data(), nullptr, hidden, inter, up.data());
    cpu::silu_mul(gate.data(), up.data(), tokens * inter);
    if (inputs_ != nullptr) inputs_->add(layer, ProjectionInput::down, gate.data(), tokens, inter);
    cpu::linear(gemm_input(gate, tokens, inter, input, quantized_input), tokens, w.down_proj.data(),
                nullptr, inter, hidden, proj.data());
    if (group_ != nullptr) group_->all_reduce_sum(rank_, proj);
    for (int64_t i = 0; i < tokens * hidden; ++i) x[i] += proj[i];
  }

  const int64_t first = chunk.all_logits ? 0 : tokens - 1;
  const int64_t vocab = m.vocab_size;
  const size_t offset = logits.size();
  logits.resize(offset + static_cast<size_t>((tokens - first) * vocab));
  std::vector<float> normed = buffer(hidden);
  // A quantized LM head takes its input quantized like every other quantized projection.
  const DType head_input = is_quantized_role(WeightRole::lm_head, quant_) ? input : DType::bf16;
  // A tensor-parallel rank holds some of the vocabulary's rows and gathers the others'.
  const int64_t head_rows = static_cast<int64_t>(weights_.output_embedding().size()) / hidden;
  std::vector<float> local_logits(group_ != nullptr ? static_cast<size_t>(head_rows) : 0);
  for (int64_t t = first; t < tokens; ++t) {
    float* row = logits.data() + offset + (t - first) * vocab;
    cpu::rms_norm(&x[t * hidden], weights_.final_norm.data(), hidden, eps, normed.data());
    cpu::linear(gemm_input(normed, 1, hidden, head_input, quantized_input), 1,
                weights_.output_embedding().data(), nullptr, hidden, head_rows,
                group_ != nullptr ? local_logits.data() : row);
    if (group_ != nullptr) {
      group_->all_gather(rank_, local_logits, {row, static_cast<size_t>(vocab)});
    }
  }
}

int64_t cpu_backend_bytes(const LlamaConfig& config, int64_t max_tokens, int64_t block_size) {
  const auto layout =
      kv_cache_layout(config.model, block_size, (max_tokens + block_size - 1) / block_size);
  // total_params counts a tied embedding once, as the backend holds it.
  return 4 * config.model.total_params() + 4 * layout.slots() * layout.elements_per_token();
}

SmoothQuantStats calibrate_smoothquant(CpuBackend& backend, int64_t tokens, uint64_t seed) {
  const ModelConfig& m = backend.config().model;
  const int64_t block_size = backend.kv_layout().block_size;
  if (tokens < 1 || tokens > backend.kv_layout().slots()) {
    throw std::invalid_argument("calibrate_smoothquant: the cache does not hold the tokens");
  }
  SmoothQuantStats stats = SmoothQuantStats::zeros(m.num_layers, m.hidden_size);
  for (int64_t l = 0; l < m.num_layers; ++l) {
    const LayerWeights& w = backend.weights().layers[static_cast<size_t>(l)];
    auto& qkv = stats.qkv_weight[static_cast<size_t>(l)];
    merge_column_absmax(w.q_proj.data(), m.q_dim(), m.hidden_size, qkv);
    merge_column_absmax(w.k_proj.data(), m.kv_dim(), m.hidden_size, qkv);
    merge_column_absmax(w.v_proj.data(), m.kv_dim(), m.hidden_size, qkv);
    auto& gate_up = stats.gate_up_weight[static_cast<size_t>(l)];
    merge_column_absmax(w.gate_proj.data(), m.intermediate_size, m.hidden_size, gate_up);
    merge_column_absmax(w.up_proj.data(), m.intermediate_size, m.hidden_size, gate_up);
  }
  SequenceChunk chunk;
  chunk.tokens = calibration_tokens(m.vocab_size, tokens, seed);
  for (int64_t b = 0; b < (tokens + block_size - 1) / block_size; ++b) {
    chunk.block_table.push_back(static_cast<int32_t>(b));
  }
  backend.collect_smoothquant_stats(&stats);
  backend.forward({{chunk}});
  backend.collect_smoothquant_stats(nullptr);
  return stats;
}

void quantize_for_cpu(LlamaModel& model, int64_t block_size, const QuantConfig& quant,
                      const SmoothingFactors* smoothing) {
  const ModelConfig& m = model.config.model;
  check_moe_quantization(model.config, quant);
  check_quant_config(quant, m.hidden_size, m.intermediate_size, m.q_dim());
  SmoothingFactors calibrated;
  if (quant.activations == DType::int8 && smoothing == nullptr) {
    CpuBackend unquantized(model.config, model.weights, block_size,
                           (quant.calibration_tokens + block_size - 1) / block_size);
    calibrated =
        smoothing_factors(calibrate_smoothquant(unquantized, quant.calibration_tokens, /*seed=*/0),
                          quant.smoothquant_alpha);
    smoothing = &calibrated;
  }
  apply_quantization(model.weights, model.config, quant, smoothing);
}

std::unique_ptr<CpuBackend> make_cpu_backend(LlamaModel model, int64_t max_tokens,
                                             int64_t block_size, const QuantConfig& quant,
                                             const SmoothingFactors* smoothing) {
  if (max_tokens < 1 || block_size < 1) {
    throw std::invalid_argument("make_cpu_backend: max_tokens and block_size must be positive");
  }
  quantize_for_cpu(model, block_size, quant, smoothing);
  const int64_t blocks = (max_tokens + block_size - 1) / block_size;
  return std::make_unique<CpuBackend>(std::move(model.config), std::move(model.weights), block_size,
                                      blocks, quant);
}

}  // namespace inferlab::engine
