// The CUDA backend's launches for one forward pass: the embedding, each layer, the final norm.
// Two forms of a layer with the same numerics (HF's bf16 rounding points):
//   unfused (any batch):   [add+]RMSNorm → QKV → RoPE+KV write → attention → O → add+RMSNorm →
//                          gate/up → SiLU×mul → down   (the residual add waits for the next norm)
//   fused (decode batches that take the GEMV kernels, --fusion on):
//                          QKV GEMV with the RMSNorm inside (and RoPE + KV write as its epilogue
//                          where engine_rope_in_qkv says so) → [RoPE+KV write →] attention →
//                          O GEMV adding into the residual → gate/up GEMV with the RMSNorm inside
//                          and SiLU×mul as its epilogue → down GEMV adding into the residual
// so a decode layer launches 4 or 5 kernels (+ attention's) instead of 8. Under tensor parallelism
// (options.collectives) the O and down outputs are partial sums, all-reduced over the GPUs
// before the residual stream reads them (row_parallel_epilogue says how the fused form does it).
#include <cmath>

#include "engine/cuda/attention.hpp"
#include "engine/cuda/calibration_kernels.hpp"
#include "engine/cuda/cuda_backend_impl.hpp"
#include "engine/cuda/layer_kernels.hpp"
#include "model/engine_decode_plan.hpp"
#include "model/engine_gemv_rows.hpp"

namespace inferlab::engine::cuda {

bool CudaBackend::fused_for(int tokens) const {
  // A mixture of experts runs its MLP block unfused (launch_moe_block), so the whole layer does.
  if (!options_.fusion || stats_.data() != nullptr || weights_.layers.empty() ||
      config_.model.is_moe()) {
    return false;
  }
  const DeviceLayer& w = weights_.layers.front();
  return projector_.takes_gemv(tokens, w.qkv) && projector_.takes_gemv(tokens, w.o_proj) &&
         projector_.takes_gemv(tokens, w.gate_up) && projector_.takes_gemv(tokens, w.down);
}

GemvFused CudaBackend::row_parallel_epilogue(const __nv_bfloat16* input) {
  GemvFused out;
  out.x = input;
  // On one GPU the O and down GEMVs add into the residual stream. Under tensor parallelism rank
  // 0 does so with its partial sum and the other ranks write theirs over their copy of the
  // stream, so that the all-reduce of the stream that follows leaves residual + Σ partials on
  // every rank, with no kernel for the add.
  if (options_.collectives == nullptr || options_.collectives->rank() == 0) {
    out.epilogue = GemvFused::Epilogue::residual_add;
    out.residual = residual_.data();
  } else {
    out.epilogue = GemvFused::Epilogue::store;
    out.y = residual_.data();
  }
  return out;
}

void CudaBackend::launch_model(const ForwardMetadata& meta) {
  const ModelConfig& m = config_.model;
  routing_.clear();
  routing_slots_ = 0;  // (a pass that failed after recording leaves nothing for this one)
  const int tokens = meta.tokens();
  const auto o = meta.offsets();
  const int32_t* dev = metadata_.data();
  const int hidden = static_cast<int>(m.hidden_size);
  const auto eps = static_cast<float>(config_.rms_norm_eps);
  const double t = tokens;

  embedding_gather(weights_.embed_tokens, dev + o.token_ids, tokens, hidden, residual_.data(),
                   stream_);
  timer_.mark("embedding", 4.0 * t * hidden);
  if (persistent_for(meta)) {  // every layer in one launch (decode_layers.hpp)
    launch_persistent_layers(meta);
    rms_norm(residual_.data(), weights_.final_norm, tokens, hidden, eps, normed_.data(), stream_);
    logit_rows_ = dev + o.logit_rows;
    return;
  }

  PagedAttentionParams attention;
  attention.q = qkv_.data();
  attention.q_row_stride = m.q_dim() + 2 * m.kv_dim();
  attention.block_tables = dev + o.block_tables;
  attention.block_table_stride = meta.block_table_stride;
  attention.query_start = dev + o.query_start;
  attention.context_lens = dev + o.context_lens;
  attention.num_seqs = meta.sequences();
  attention.num_tokens = tokens;
  attention.max_query_len = meta.max_query_len;
  attention.single_query_seqs = meta.single_query_seqs;
  attention.max_context_len = meta.max_context_len;
  attention.num_heads = static_cast<int>(m.num_heads);
  attention.num_kv_heads = static_cast<int>(m.num_kv_heads);
  attention.head_dim = static_cast<int>(m.head_dim);
  attention.block_size = static_cast<int>(layout_.block_size);
  attention.sliding_window = static_cast<int>(config_.sliding_window);
  attention.softmax_scale = 1.0f / std::sqrt(static_cast<float>(m.head_dim));
  attention.naive = options_.naive_attention;
  apply_attention_tuning(options_.tuning.attention, &attention);
  attention.out = attn_.data();
  attention.workspace = attention_workspace_.data();
  attention.workspace_bytes = attention_workspace_.bytes();
  // A few tokens per sequence (speculative verification, a draft's catch-up): the decode kernel
  // over the tokens, each a sequence of one query (model/engine_decode_plan.hpp).
  if (attention_by_token(meta.max_query_len, tokens) && !options_.naive_attention &&
      paged_attention_workspace_bytes(tokens, attention.num_heads, attention.head_dim,
                                      meta.max_context_len) <= attention.workspace_bytes) {
    attention.query_start = dev + o.token_index;
    attention.context_lens = dev + o.token_context;
    attention.table_rows = dev + o.token_seq;
    attention.num_seqs = tokens;
    attention.max_query_len = 1;
    attention.single_query_seqs = tokens;
  }

  const bool fused = fused_for(tokens);
  for (int64_t layer = 0; layer < m.num_layers; ++layer) {
    launch_layer(layer, meta, attention, fused);
  }
  if (fused) {  // the residual stream is complete: the down GEMVs added into it
    rms_norm(residual_.data(), weights_.final_norm, tokens, hidden, eps, normed_.data(), stream_);
    timer_.mark("norm", 4.0 * t * hidden);
  } else {
    add_rms_norm(residual_.data(), proj_.data(), weights_.final_norm, tokens, hidden, eps,
                 normed_.data(), stream_);
    timer_.mark("norm", 8.0 * t * hidden);
  }
  logit_rows_ = dev + o.logit_rows;
}

void CudaBackend::launch_layer(int64_t layer, const ForwardMetadata& meta,
                               PagedAttentionParams& attention, bool fused) {
  float* stats = stats_.data() == nullptr
                     ? nullptr
                     : stats_.data() + static_cast<size_t>(layer) * 4 * config_.model.hidden_size;
  launch_attention_block(layer, meta, attention, fused, stats);
  launch_mlp_block(layer, meta.tokens(), fused,
                   stats == nullptr ? nullptr : stats + config_.model.hidden_size);
}

void CudaBackend::launch_attention_block(int64_t layer, const ForwardMetadata& meta,
                                         PagedAttentionParams& attention, bool fused,
                                         float* stats) {
  // Norm (with the previous layer's residual add unless fused), QKV, RoPE + KV write (in the QKV
  // GEMV's epilogue where engine_rope_in_qkv says so), attention, O (+ residual when fused).
  const ModelConfig& m = config_.model;
  const DeviceLayer& w = weights_.layers[static_cast<size_t>(layer)];
  const int tokens = meta.tokens();
  const auto o = meta.offsets();
  const int32_t* dev = metadata_.data();
  const int hidden = static_cast<int>(m.hidden_size);
  const int64_t q_dim = m.q_dim(), qkv_dim = m.q_dim() + 2 * m.kv_dim();
  const auto eps = static_cast<float>(config_.rms_norm_eps);
  const double t = tokens;
  const double act = 2.0 * t;  // bytes per feature of a projection's input or output rows
  const KvLayerCache cache = kv_.layer(layer);
  const double kv_token_bytes =
      KvStorage::bytes_per_token(layout_, cache.format) / static_cast<double>(m.num_layers);
  const bool rope_in_qkv = engine_rope_in_qkv(options_.tuning.rope_in_qkv, fused,
                                              projector_.takes_rope_epilogue(tokens, w.qkv),
                                              cache.format, w.q_norm != nullptr);
  if (fused) {
    GemvFused qkv{residual_.data(), w.input_norm, eps,    GemvFused::Epilogue::store,
                  w.qkv_bias,       qkv_.data(),  nullptr};
    double extra_bytes = 0;
    if (rope_in_qkv) {  // RoPE and the cache write in the GEMV's epilogue
      qkv.epilogue = GemvFused::Epilogue::rope_kv_write;
      qkv.rope = {attention.num_heads,
                  attention.num_kv_heads,
                  attention.head_dim,
                  dev + o.positions,
                  dev + o.slots,
                  inv_freq_.data(),
                  static_cast<__nv_bfloat16*>(cache.k),
                  static_cast<__nv_bfloat16*>(cache.v)};
      extra_bytes = 8.0 * t + t * kv_token_bytes;  // positions, slots; the new keys and values
    }
    projector_.gemv_fused(qkv, tokens, w.qkv, stream_);
    timer_.mark("gemm_qkv",
                matrix_bytes(w.qkv) + act * (hidden + qkv_dim) + 2.0 * hidden + extra_bytes,
                2.0 * t * qkv_dim * hidden);
  } else {
    if (layer == 0) {
      rms_norm(residual_.data(), w.input_norm, tokens, hidden, eps, normed_.data(), stream_);
      timer_.mark("norm", 4.0 * t * hidden);
    } else {
      add_rms_norm(residual_.data(), proj_.data(), w.input_norm, tokens, hidden, eps,
                   normed_.data(), stream_);
      timer_.mark("norm", 8.0 * t * hidden);
    }
    if (stats != nullptr) merge_column_absmax(normed_.data(), tokens, hidden, stats, stream_);
    projector_.linear(normed_.data(), tokens, w.qkv, w.qkv_bias, qkv_.data(), false, stream_);
    timer_.mark("gemm_qkv", matrix_bytes(w.qkv) + act * (hidden + qkv_dim),
                2.0 * t * qkv_dim * hidden);
  }
  if (w.q_norm != nullptr) {  // Qwen3: every query and key head normalised before RoPE
    head_rms_norm(qkv_.data(), tokens, attention.num_heads, attention.num_kv_heads,
                  attention.head_dim, w.q_norm, w.k_norm, eps, stream_);
    timer_.mark("norm", 2.0 * act * (qkv_dim - m.kv_dim()));
  }
  if (!rope_in_qkv) {
    rope_kv_write(qkv_.data(), tokens, attention.num_heads, attention.num_kv_heads,
                  attention.head_dim, dev + o.positions, dev + o.slots, inv_freq_.data(), cache,
                  stream_);
    timer_.mark("rope_kv_write", act * (qkv_dim + q_dim) + t * kv_token_bytes);
  }
  attention.cache = cache;
  paged_attention(attention, stream_);
  // Keys and values are read from HBM once per sequence (the query tiles of a prefill share
  // them through L2), and each query attends to its causal prefix.
  double context_sum = 0, attended_sum = 0;
  for (int s = 0; s < meta.sequences(); ++s) {
    const double q_len = meta.query_start[s + 1] - meta.query_start[s];
    const double cached = meta.context_lens[s] - q_len;
    context_sum += meta.context_lens[s];
    attended_sum += q_len * cached + q_len * (q_len + 1) / 2;
  }
  timer_.mark("attention", context_sum * kv_token_bytes + act * 2 * q_dim,
              4.0 * attended_sum * q_dim);
  if (fused) {
    projector_.gemv_fused(row_parallel_epilogue(attn_.data()), tokens, w.o_proj, stream_);
    timer_.mark("gemm_o", matrix_bytes(w.o_proj) + act * (q_dim + 2 * hidden),
                2.0 * t * hidden * q_dim);
    all_reduce(residual_.data(), tokens);
  } else {
    projector_.linear(attn_.data(), tokens, w.o_proj, nullptr, proj_.data(), false, stream_);
    timer_.mark("gemm_o", matrix_bytes(w.o_proj) + act * (q_dim + hidden),
                2.0 * t * hidden * q_dim);
    all_reduce(proj_.data(), tokens);
  }
}

void CudaBackend::launch_mlp_block(int64_t layer, int tokens, bool fused, float* stats) {
  // Norm (with the attention block's residual add unless fused), gate/up, SiLU×mul, down
  // (+ residual when fused).
  if (config_.model.is_moe()) {
    launch_moe_block(layer, tokens);
    all_reduce(proj_.data(), tokens);  // a rank's experts hold a slice of every expert's channels
    return;
  }
  const ModelConfig& m = config_.model;
  const DeviceLayer& w = weights_.layers[static_cast<size_t>(layer)];
  const int hidden = static_cast<int>(m.hidden_size), inter = static_cast<int>(m.intermediate_size);
  const auto eps = static_cast<float>(config_.rms_norm_eps);
  const double t = tokens;
  const double act = 2.0 * t;  // bytes per feature of a projection's input or output rows
  if (fused) {
    GemvFused gate_up{residual_.data(), w.post_norm, eps,    GemvFused::Epilogue::swiglu,
                      nullptr,          act_.data(), nullptr};
    projector_.gemv_fused(gate_up, tokens, w.gate_up, stream_);
    timer_.mark("gemm_gate_up", matrix_bytes(w.gate_up) + act * (hidden + inter) + 2.0 * hidden,
                4.0 * t * inter * hidden);
    projector_.gemv_fused(row_parallel_epilogue(act_.data()), tokens, w.down, stream_);
    timer_.mark("gemm_down", matrix_bytes(w.down) + act * (inter + 2 * hidden),
                2.0 * t * hidden * inter);
    all_reduce(residual_.data(), tokens);
    return;
  }
  add_rms_norm(residual_.data(), proj_.data(), w.post_norm, tokens, hidden, eps, normed_.data(),
               stream_);
  timer_.mark("norm", 8.0 * t * hidden);
  if (stats != nullptr) {
    merge_column_absmax(normed_.data(), tokens, hidden, stats, stream_);
  }
  projector_.linear(normed_.data(), tokens, w.gate_up, nullptr, gate_up_.data(), false, stream_);
  timer_.mark("gemm_gate_up", matrix_bytes(w.gate_up) + act * (hidden + 2 * inter),
              4.0 * t * inter * hidden);
  silu_mul_halves(gate_up_.data(), tokens, inter, act_.data(), stream_);
  timer_.mark("silu_mul", act * 3 * inter);
  projector_.linear(act_.data(), tokens, w.down, nullptr, proj_.data(), false, stream_);
  timer_.mark("gemm_down", matrix_bytes(w.down) + act * (inter + hidden), 2.0 * t * hidden * inter);
  all_reduce(proj_.data(), tokens);
}

}  // namespace inferlab::engine::cuda
