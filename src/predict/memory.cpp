#include "predict/memory.hpp"

#include "model/footprint.hpp"

namespace inferlab {

MemoryEstimate estimate_memory(const ModelConfig& model, const Precision& p, const KernelPlan& plan,
                               const ShardDims& s, int64_t batch, int64_t input_tokens,
                               int64_t output_tokens, double capacity_bytes,
                               double gpu_memory_utilization) {
  MemoryEstimate m;
  m.weights_bytes = weight_bytes_per_device(model, p, s);
  m.kv_cache_bytes = static_cast<double>(batch) *
                     static_cast<double>(input_tokens + output_tokens) *
                     kv_bytes_per_token(model, p.kv, s);
  // Live at once in a prefill layer: residual, normed input, q/k/v, gate and up outputs, their
  // product; the logits of the last tokens in fp32; unfused attention keeps scores and probs.
  const double fb = dtype_bytes(p.float_dtype);
  const double tokens = static_cast<double>(batch * input_tokens);
  const double mlp_rows = model.is_moe() ? tokens * model.experts_per_token : tokens;
  const double h = static_cast<double>(s.hidden);
  const double qkv = static_cast<double>((s.q_heads + 2 * s.kv_heads) * s.head_dim);
  double live = tokens * (2.0 * h + qkv) +
                mlp_rows * (model.gpt_style ? 2.0 : 3.0) * static_cast<double>(s.intermediate);
  m.activations_bytes = live * fb + static_cast<double>(batch * s.vocab) * 4.0;
  if (!plan.flash_attention) {
    double scores = static_cast<double>(batch * s.q_heads) * static_cast<double>(input_tokens) *
                    static_cast<double>(input_tokens);
    m.activations_bytes += 2.0 * scores * fb;
  }
  m.total_bytes = m.weights_bytes + m.kv_cache_bytes + m.activations_bytes;
  m.capacity_bytes = capacity_bytes;
  m.usable_bytes = capacity_bytes * gpu_memory_utilization;
  m.fits = m.total_bytes <= m.usable_bytes;
  return m;
}

}  // namespace inferlab
