// The CUDA backend's passes: a forward pass (logits to the host), a forward pass with sampling
// on the GPU (one token per sequence, or per logit row), decode and speculative-verification
// steps replayed from CUDA graphs,
// and the buffers they use. The layers' launches are in cuda_forward.cpp, construction and the
// memory budget in cuda_backend_factory.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "engine/cuda/attention.hpp"
#include "engine/cuda/calibration_kernels.hpp"
#include "engine/cuda/cuda_backend_impl.hpp"
#include "engine/cuda/layer_kernels.hpp"
#include "engine/cuda/tp_kernels.hpp"
#include "engine/rope.hpp"
#include "model/engine_decode_plan.hpp"

namespace inferlab::engine::cuda {

int64_t logit_rows_capacity(const CudaBackendOptions& options) {
  return std::max(kLogitRowsPerChunk, options.max_sequences);
}

int64_t max_context(const LlamaConfig& config) {
  return config.model.max_position_embeddings > 0 ? config.model.max_position_embeddings : 131072;
}

int64_t tensor_parallel_ranks(const CudaBackendOptions& options) {
  return options.collectives == nullptr ? 1 : options.collectives->ranks();
}

int64_t lm_head_rows(const LlamaConfig& config, const CudaBackendOptions& options) {
  const int64_t ranks = tensor_parallel_ranks(options);
  return (config.model.vocab_size + ranks - 1) / ranks;
}

int64_t BackendBuffers::activation_elements() const {
  return residual + normed + qkv + attn + proj + gate_up + act + lm_rows + 2 * moe_rows;
}

int64_t BackendBuffers::bytes() const {
  return 2 * activation_elements() + 4 * (logits_elements + tp_logits_elements) +
         static_cast<int64_t>(attention_workspace + sampling_workspace + projection_workspace) +
         4 * (metadata_elements + moe_ints + moe_floats) +
         sampled_rows * static_cast<int64_t>(sizeof(int32_t) + sizeof(RowSampling));
}

size_t attention_workspace_bytes(const ModelConfig& m, const CudaBackendOptions& o,
                                 int64_t context) {
  const auto heads = static_cast<int>(m.num_heads), head_dim = static_cast<int>(m.head_dim);
  const auto workspace = [&](int64_t tokens, bool naive) {
    return paged_attention_workspace_bytes(static_cast<int>(tokens), heads, head_dim,
                                           static_cast<int>(context), naive);
  };
  // Every decoding sequence's splits at the longest context; and a pass of a few tokens a
  // sequence (speculative verification, a draft's catch-up) runs the decode kernel over its
  // tokens, each a sequence of one query with its own splits (cuda_forward.cpp): up to
  // kTokenViewMaxTokens of them. Sized for the sequences alone, a verification of k + 1 tokens
  // past a short context fell back to the tiled prefill kernel (a 174M model of context 1024 at
  // one sequence: 5 tokens need 40 rows of partials, the sequences' sizing gave 16).
  const int64_t sequences = std::min(o.max_sequences, o.max_batch_tokens);
  const int64_t by_token = std::min(kTokenViewMaxTokens, o.max_batch_tokens);
  return std::max(workspace(sequences, o.naive_attention),
                  o.naive_attention ? size_t{0} : workspace(by_token, false));
}

BackendBuffers buffers_for(const LlamaConfig& config, const CudaBackendOptions& o) {
  const ModelConfig& m = config.model;
  const int64_t t = o.max_batch_tokens, rows = logit_rows_capacity(o);
  BackendBuffers b;
  b.residual = b.normed = b.proj = t * m.hidden_size;
  b.qkv = t * (m.q_dim() + 2 * m.kv_dim());
  b.attn = t * m.q_dim();
  // A mixture of experts' gate/up and SiLU×mul outputs are per slot (token · choice).
  b.moe_slots = m.is_moe() ? t * m.experts_per_token : 0;
  b.gate_up = std::max(t, b.moe_slots) * 2 * m.intermediate_size;
  b.act = std::max(t, b.moe_slots) * m.intermediate_size;
  b.moe_rows = b.moe_slots * m.hidden_size;
  if (m.is_moe()) {
    b.moe_ints = 3 * b.moe_slots + m.num_experts + 1;
    b.moe_floats = b.moe_slots + t * m.num_experts;  // slot weights, then router logits
  }
  b.lm_rows = rows * m.hidden_size;
  b.logits_elements = rows * m.vocab_size;
  const int64_t ranks = tensor_parallel_ranks(o);
  if (ranks > 1) b.tp_logits_elements = rows * lm_head_rows(config, o) * (1 + ranks);
  const int64_t context = max_context(config);
  b.attention_workspace = attention_workspace_bytes(m, o, context);
  // One id per sequence (forward_sample) or per logit row of a pass (forward_sample_rows: at
  // most one per token); a sampling launch takes a sequence per row, or an LM-head chunk.
  b.sampled_rows = std::max({rows, o.max_sequences, t});
  b.sampling_workspace =
      sampling_workspace_bytes(static_cast<int>(rows), static_cast<int>(m.vocab_size));
  b.projector_rows = std::max({t, rows, b.moe_slots});
  b.projector_in = std::max({m.hidden_size, m.intermediate_size, m.q_dim()});
  b.projector_out = std::max({m.q_dim() + 2 * m.kv_dim(), 2 * m.intermediate_size, m.vocab_size});
  b.projection_workspace = static_cast<size_t>(
      Projector::workspace_bytes(b.projector_rows, b.projector_in, b.projector_out, o.quant.weights,
                                 o.quant.gemm_input_format()));
  const int64_t blocks_per_seq = (context + o.block_size - 1) / o.block_size;
  // Per token: id, position, slot, logit row, and its token view (index, context, sequence).
  b.metadata_elements =
      7 * t + 1 + 2 * o.max_sequences + 1 + rows + o.max_sequences * blocks_per_seq;
  return b;
}

CudaBackend::CudaBackend(const LlamaConfig& config, const WeightLoader& loader,
                         const CudaBackendOptions& options, int64_t kv_blocks)
    : config_(config),
      options_(options),
      sizes_(buffers_for(config, options)),
      weights_(config, options.quant, loader, lm_head_rows(config, options)),
      projector_(sizes_.projector_rows, sizes_.projector_in, sizes_.projector_out,
                 options.quant.weights, options.quant.gemm_input_format(),
                 options.tuning.projection) {
  const ModelConfig& m = config_.model;
  layout_ = kv_cache_layout(m, options.block_size, kv_blocks);
  INFERLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  if (!options.gemv) projector_.set_gemv(false);
  kv_ = KvStorage(layout_, options.quant.kv);

  const auto inv_freq_double = rope_inverse_frequencies(config_.rope, m.head_dim);
  std::vector<float> inv_freq(inv_freq_double.begin(), inv_freq_double.end());
  inv_freq_ = DeviceBuffer<float>(inv_freq.size());
  inv_freq_.upload(inv_freq.data(), inv_freq.size());

  const BackendBuffers& b = sizes_;
  const auto elements = [](int64_t n) { return static_cast<size_t>(n); };
  residual_ = DeviceBuffer<bf16>(elements(b.residual));
  normed_ = DeviceBuffer<bf16>(elements(b.normed));
  qkv_ = DeviceBuffer<bf16>(elements(b.qkv));
  attn_ = DeviceBuffer<bf16>(elements(b.attn));
  proj_ = DeviceBuffer<bf16>(elements(b.proj));
  gate_up_ = DeviceBuffer<bf16>(elements(b.gate_up));
  act_ = DeviceBuffer<bf16>(elements(b.act));
  lm_rows_ = DeviceBuffer<bf16>(elements(b.lm_rows));
  moe_in_ = DeviceBuffer<bf16>(elements(b.moe_rows));
  moe_out_ = DeviceBuffer<bf16>(elements(b.moe_rows));
  moe_ints_ = DeviceBuffer<int32_t>(elements(b.moe_ints));
  moe_floats_ = DeviceBuffer<float>(elements(b.moe_floats));
  logits_ = DeviceBuffer<float>(elements(b.logits_elements));
  tp_logits_ = DeviceBuffer<float>(elements(b.tp_logits_elements));
  attention_workspace_ = DeviceBuffer<unsigned char>(b.attention_workspace);
  sampling_workspace_ = DeviceBuffer<unsigned char>(b.sampling_workspace);
  metadata_ = DeviceBuffer<int32_t>(static_cast<size_t>(b.metadata_elements));
  sampled_ids_ = DeviceBuffer<int32_t>(static_cast<size_t>(b.sampled_rows));
  row_sampling_ = DeviceBuffer<RowSampling>(static_cast<size_t>(b.sampled_rows));
  setup_persistent_decode();
}

CudaBackend::~CudaBackend() {
  write_persistent_trace();
  for (auto& [shape, graph] : graphs_) cudaGraphExecDestroy(graph);
  cudaStreamDestroy(stream_);
}

void CudaBackend::fill_kv_cache_random(uint64_t seed) {
  kv_.fill_random(seed, stream_);
  INFERLAB_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

std::unique_ptr<KvHostCopy> CudaBackend::copy_kv_blocks_to_host(std::span<const int32_t> blocks) {
  check_swap_blocks(blocks, layout_);
  const auto bytes = blocks.size() * static_cast<size_t>(kv_block_host_bytes());
  std::unique_ptr<KvHostCopy> copy = swap_space_->take(bytes);
  kv_.copy_blocks_out(blocks, static_cast<PinnedCopy&>(*copy).data(), stream_);
  return copy;
}

void CudaBackend::copy_kv_blocks_from_host(std::span<const int32_t> blocks,
                                           std::span<const std::byte> host) {
  check_swap_blocks(blocks, layout_, static_cast<int64_t>(host.size()), kv_block_host_bytes());
  kv_.copy_blocks_in(blocks, host, stream_);
}

void CudaBackend::warm_gemms(int64_t max_rows) {
  if (weights_.layers.empty()) return;
  // Zero inputs: finite values for the quantized inputs' per-row scales.
  for (DeviceBuffer<__nv_bfloat16>* input : {&normed_, &attn_, &act_, &lm_rows_}) {
    INFERLAB_CUDA_CHECK(cudaMemsetAsync(input->data(), 0, input->bytes(), stream_));
  }
  const DeviceLayer& w = weights_.layers.front();
  for (int64_t n = 1; n <= std::min(max_rows, options_.max_batch_tokens); ++n) {
    projector_.linear(normed_.data(), n, w.qkv, w.qkv_bias, qkv_.data(), false, stream_);
    projector_.linear(attn_.data(), n, w.o_proj, nullptr, proj_.data(), false, stream_);
    if (config_.model.is_moe()) continue;
    projector_.linear(normed_.data(), n, w.gate_up, nullptr, gate_up_.data(), false, stream_);
    projector_.linear(act_.data(), n, w.down, nullptr, proj_.data(), false, stream_);
  }
  if (config_.model.is_moe()) {  // an expert's GEMMs at every row count a pass may give one
    const ModelConfig& m = config_.model;
    const DeviceMatrix gate_up =
        expert_matrix(w.experts_gate_up, 2 * m.intermediate_size, m.hidden_size);
    const DeviceMatrix down = expert_matrix(w.experts_down, m.hidden_size, m.intermediate_size);
    INFERLAB_CUDA_CHECK(cudaMemsetAsync(moe_in_.data(), 0, moe_in_.bytes(), stream_));
    for (int64_t n = 1; n <= std::min(max_rows, sizes_.moe_slots); ++n) {
      projector_.linear(moe_in_.data(), n, gate_up, nullptr, gate_up_.data(), false, stream_);
      projector_.linear(act_.data(), n, down, nullptr, moe_out_.data(), false, stream_);
    }
  }
  for (int64_t n = 1; n <= logit_rows_capacity(options_); ++n) {
    projector_.linear(lm_rows_.data(), n, weights_.lm_head, nullptr, logits_.data(), true, stream_);
  }
  INFERLAB_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::start_smoothquant_stats() {
  const ModelConfig& m = config_.model;
  const auto hidden = static_cast<size_t>(m.hidden_size);
  // [layer][qkv input, gate/up input, qkv weight, gate/up weight][hidden]
  stats_ = DeviceBuffer<float>(static_cast<size_t>(m.num_layers) * 4 * hidden);
  INFERLAB_CUDA_CHECK(cudaMemsetAsync(stats_.data(), 0, stats_.bytes(), stream_));
  for (int64_t l = 0; l < m.num_layers; ++l) {
    const DeviceLayer& w = weights_.layers[static_cast<size_t>(l)];
    if (w.qkv.format != DType::bf16) {
      throw std::invalid_argument("SmoothQuant statistics need the bf16 model");
    }
    float* at = stats_.data() + static_cast<size_t>(l) * 4 * hidden;
    merge_column_absmax(static_cast<const bf16*>(w.qkv.data), w.qkv.out, m.hidden_size,
                        at + 2 * hidden, stream_);
    merge_column_absmax(static_cast<const bf16*>(w.gate_up.data), w.gate_up.out, m.hidden_size,
                        at + 3 * hidden, stream_);
  }
}

SmoothQuantStats CudaBackend::finish_smoothquant_stats() {
  const ModelConfig& m = config_.model;
  std::vector<float> host(stats_.size());
  INFERLAB_CUDA_CHECK(cudaStreamSynchronize(stream_));
  stats_.download(host.data(), host.size());
  stats_ = DeviceBuffer<float>();
  SmoothQuantStats stats = SmoothQuantStats::zeros(m.num_layers, m.hidden_size);
  const auto hidden = static_cast<size_t>(m.hidden_size);
  for (size_t l = 0; l < static_cast<size_t>(m.num_layers); ++l) {
    const float* at = host.data() + l * 4 * hidden;
    stats.qkv_input[l].assign(at, at + hidden);
    stats.gate_up_input[l].assign(at + hidden, at + 2 * hidden);
    stats.qkv_weight[l].assign(at + 2 * hidden, at + 3 * hidden);
    stats.gate_up_weight[l].assign(at + 3 * hidden, at + 4 * hidden);
  }
  return stats;
}

void CudaBackend::run_model(const ForwardMetadata& meta) {
  upload_metadata(meta);
  timer_.begin(stream_);
  launch_model(meta);
}

void CudaBackend::upload_metadata(const ForwardMetadata& meta) {
  const int tokens = meta.tokens();
  if (tokens > options_.max_batch_tokens || meta.sequences() > options_.max_sequences) {
    throw std::invalid_argument(fmt::format(
        "CudaBackend: a batch of {} tokens in {} sequences is over the backend's limits ({} "
        "tokens, {} sequences)",
        tokens, meta.sequences(), options_.max_batch_tokens, options_.max_sequences));
  }
  const std::vector<int32_t> packed = meta.packed();
  if (packed.size() > metadata_.size()) {
    throw std::invalid_argument(
        "CudaBackend: the batch's block tables are over the backend's "
        "limit (a context longer than the model's)");
  }
  INFERLAB_CUDA_CHECK(cudaMemcpyAsync(metadata_.data(), packed.data(),
                                      packed.size() * sizeof(int32_t), cudaMemcpyHostToDevice,
                                      stream_));
}

void CudaBackend::lm_head(int64_t first, int64_t count) {
  const ModelConfig& m = config_.model;
  // The wanted rows of the final norm's output, gathered, then the vocabulary projection.
  gather_rows(normed_.data(), logit_rows_ + first, static_cast<int>(count),
              static_cast<int>(m.hidden_size), lm_rows_.data(), stream_);
  timer_.mark("embedding", 4.0 * count * m.hidden_size);
  const int64_t rows = weights_.lm_head.out;  // the vocabulary, or this rank's padded shard
  float* out = options_.collectives == nullptr ? logits_.data() : tp_logits_.data();
  projector_.linear(lm_rows_.data(), count, weights_.lm_head, nullptr, out, true, stream_);
  timer_.mark("lm_head",
              matrix_bytes(weights_.lm_head) + count * (2.0 * m.hidden_size + 4.0 * rows),
              2.0 * count * rows * m.hidden_size);
  if (options_.collectives == nullptr) return;
  // Vocab-parallel: every rank's shard gathered, then put back in vocabulary order.
  const int ranks = options_.collectives->ranks();
  float* gathered = tp_logits_.data() + logit_rows_capacity(options_) * rows;
  options_.collectives->all_gather(out, gathered, count * rows, stream_);
  timer_.mark("all_gather", 4.0 * count * rows * ranks);
  unshard_vocab_logits(gathered, static_cast<int>(count), static_cast<int>(m.vocab_size), ranks,
                       static_cast<int>(rows), logits_.data(), stream_);
  timer_.mark("embedding", 8.0 * count * m.vocab_size);
}

void CudaBackend::all_reduce(__nv_bfloat16* data, int tokens) {
  if (options_.collectives == nullptr) return;
  const int64_t count = static_cast<int64_t>(tokens) * config_.model.hidden_size;
  options_.collectives->all_reduce_sum(data, count, stream_);
  timer_.mark("all_reduce", 2.0 * count * options_.collectives->ranks());
}

bool CudaBackend::copies_logits() const {
  return options_.collectives == nullptr || options_.collectives->rank() == 0;
}

void CudaBackend::finish_timing() {
  timer_.end(stream_);
  INFERLAB_CUDA_CHECK(cudaStreamSynchronize(stream_));
  last_device_s_ = timer_.total_s();
  profile_ = timer_.classes();
  collect_routing();
}

ForwardResult CudaBackend::forward(const ForwardBatch& batch) {
  validate_batch(batch, config_, layout_);
  const ForwardMetadata meta = build_forward_metadata(batch, layout_, /*last_only=*/false);
  const int64_t rows = static_cast<int64_t>(meta.logit_rows.size());
  run_model(meta);
  ForwardResult result;
  result.vocab_size = config_.model.vocab_size;
  result.first_row = meta.first_row;
  // Under tensor parallelism every rank computes the logits (the all-gather needs all of them)
  // and rank 0 alone copies them out.
  if (copies_logits()) result.logits.resize(static_cast<size_t>(rows * result.vocab_size));
  for (int64_t first = 0; first < rows; first += kLogitRowsPerChunk) {
    const int64_t count = std::min(kLogitRowsPerChunk, rows - first);
    lm_head(first, count);
    if (!copies_logits()) continue;
    INFERLAB_CUDA_CHECK(cudaMemcpyAsync(
        result.logits.data() + first * result.vocab_size, logits_.data(),
        static_cast<size_t>(count * result.vocab_size) * 4, cudaMemcpyDeviceToHost, stream_));
  }
  finish_timing();
  return result;
}

void CudaBackend::upload_sampling(std::span<const SampleSpec> specs, size_t rows) {
  if (rows > row_sampling_.size()) {
    throw std::invalid_argument(
        fmt::format("CudaBackend: {} rows to sample are over the backend's limit of {}", rows,
                    row_sampling_.size()));
  }
  std::vector<RowSampling> params(rows);  // padding rows: greedy
  for (size_t i = 0; i < specs.size(); ++i) {
    const SampleSpec& spec = specs[i];
    params[i] = {static_cast<float>(spec.params.temperature), static_cast<int>(spec.params.top_k),
                 static_cast<float>(spec.params.top_p), spec.uniform};
  }
  INFERLAB_CUDA_CHECK(cudaMemcpyAsync(row_sampling_.data(), params.data(),
                                      params.size() * sizeof(RowSampling), cudaMemcpyHostToDevice,
                                      stream_));
}

std::vector<int32_t> CudaBackend::forward_sample(const ForwardBatch& batch,
                                                 std::span<const SampleSpec> specs) {
  if (specs.size() != batch.sequences.size()) {
    throw std::invalid_argument("forward_sample: one SampleSpec per sequence is needed");
  }
  if (!options_.sample_on_device) return Backend::forward_sample(batch, specs);
  validate_batch(batch, config_, layout_);
  const ForwardMetadata meta = build_forward_metadata(batch, layout_, /*last_only=*/true);
  if (const auto shape = graph_shape_for(meta, /*all_rows=*/false)) {
    return run_graphed(meta, specs, *shape);
  }
  upload_sampling(specs, specs.size());
  run_model(meta);
  const auto rows = static_cast<int>(meta.logit_rows.size());
  lm_head(0, rows);
  sample_rows(logits_.data(), rows, static_cast<int>(config_.model.vocab_size),
              row_sampling_.data(), sampled_ids_.data(), sampling_workspace_.data(),
              sampling_workspace_.bytes(), stream_);
  timer_.mark("sampling", 4.0 * rows * config_.model.vocab_size);
  std::vector<int32_t> ids(static_cast<size_t>(rows));
  INFERLAB_CUDA_CHECK(cudaMemcpyAsync(ids.data(), sampled_ids_.data(), ids.size() * 4,
                                      cudaMemcpyDeviceToHost, stream_));
  finish_timing();
  return ids;
}

std::vector<int32_t> CudaBackend::forward_sample_rows(const ForwardBatch& batch,
                                                      std::span<const SampleSpec> row_specs) {
  if (!options_.sample_on_device) return Backend::forward_sample_rows(batch, row_specs);
  validate_batch(batch, config_, layout_);
  check_row_specs(batch, row_specs);
  const ForwardMetadata meta = build_forward_metadata(batch, layout_, /*last_only=*/false);
  const auto rows = static_cast<int64_t>(meta.logit_rows.size());
  // Speculative verification (every row of a few tokens per sequence) replays a graph.
  if (rows == meta.tokens()) {
    if (const auto shape = graph_shape_for(meta, /*all_rows=*/true)) {
      return run_graphed(meta, row_specs, *shape);
    }
  }
  const auto vocab = static_cast<int>(config_.model.vocab_size);
  // Eager otherwise, as forward() runs. The metadata goes first (it refuses a batch over the
  // backend's limits, before the specs could overrun their buffer); the specs before any launch, so
  // that their host copy does not wait for the layers. Under tensor parallelism every rank samples
  // the same gathered rows with the same specs, and so picks the same ids.
  upload_metadata(meta);
  upload_sampling(row_specs, static_cast<size_t>(rows));
  timer_.begin(stream_);
  launch_model(meta);
  for (int64_t first = 0; first < rows; first += kLogitRowsPerChunk) {
    const int64_t count = std::min(kLogitRowsPerChunk, rows - first);
    lm_head(first, count);
    sample_rows(logits_.data(), static_cast<int>(count), vocab, row_sampling_.data() + first,
                sampled_ids_.data() + first, sampling_workspace_.data(),
                sampling_workspace_.bytes(), stream_);
    timer_.mark("sampling", 4.0 * static_cast<double>(count) * vocab);
  }
  std::vector<int32_t> ids(static_cast<size_t>(rows));
  INFERLAB_CUDA_CHECK(cudaMemcpyAsync(ids.data(), sampled_ids_.data(), ids.size() * 4,
                                      cudaMemcpyDeviceToHost, stream_));
  finish_timing();
  return ids;
}

std::optional<GraphShape> CudaBackend::graph_shape_for(const ForwardMetadata& meta,
                                                       bool all_rows) const {
  // A profiled pass runs eagerly: per-kernel events cannot sit inside a graph.
  if (!options_.cuda_graphs || timer_.enabled()) return std::nullopt;
  const int32_t query_len = uniform_query_len(meta);
  if (query_len < 1 || query_len > kGraphMaxQueryTokens || query_len > layout_.block_size) {
    return std::nullopt;
  }
  GraphShape shape;
  // Sequences padded to a power of two (at most max_sequences), contexts bounded by a power of
  // two of at least 256 (at most the model's context): the bound the decode kernel plans its
  // splits at (model/engine_decode_plan.hpp); positions past it never reach a backend
  // (validate_batch).
  shape.padded =
      static_cast<int32_t>(graph_padded_sequences(meta.sequences(), options_.max_sequences));
  shape.query_len = query_len;
  shape.all_rows = all_rows && query_len > 1;  // one token a sequence: its row is its last
  shape.context_bound = static_cast<int32_t>(
      std::min<int64_t>(graph_context_bucket(meta.max_context_len), max_context(config_)));
  shape.stride = static_cast<int32_t>(layout_.blocks_for(shape.context_bound));
  // The padded pass must fit the buffers, its LM head one chunk.
  if (shape.tokens() > options_.max_batch_tokens ||
      shape.rows() > std::min(logit_rows_capacity(options_), kLogitRowsPerChunk) ||
      shape.rows() > static_cast<int32_t>(row_sampling_.size()) ||
      (config_.model.is_moe() && !moe_capturable(shape.tokens()))) {
    return std::nullopt;
  }
  return shape;
}

std::vector<int32_t> CudaBackend::run_graphed(const ForwardMetadata& meta,
                                              std::span<const SampleSpec> specs,
                                              const GraphShape& shape) {
  const ForwardMetadata shaped =
      pad_to_graph_shape(meta, shape, static_cast<int32_t>(layout_.num_blocks), layout_.block_size);
  upload_sampling(specs, static_cast<size_t>(shape.rows()));
  upload_metadata(shaped);
  cudaGraphExec_t& graph = graphs_[shape.key()];
  if (graph == nullptr) {
    cudaGraph_t captured = nullptr;
    INFERLAB_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    try {
      launch_model(shaped);
      lm_head(0, shape.rows());
      sample_rows(logits_.data(), shape.rows(), static_cast<int>(config_.model.vocab_size),
                  row_sampling_.data(), sampled_ids_.data(), sampling_workspace_.data(),
                  sampling_workspace_.bytes(), stream_);
    } catch (...) {
      cudaStreamEndCapture(stream_, &captured);  // leaves the stream usable
      if (captured != nullptr) cudaGraphDestroy(captured);
      graphs_.erase(shape.key());
      throw;
    }
    INFERLAB_CUDA_CHECK(cudaStreamEndCapture(stream_, &captured));
    INFERLAB_CUDA_CHECK(cudaGraphInstantiate(&graph, captured, 0));
    cudaGraphDestroy(captured);
  }
  timer_.begin(stream_);
  INFERLAB_CUDA_CHECK(cudaGraphLaunch(graph, stream_));
  std::vector<int32_t> ids(meta.logit_rows.size());
  INFERLAB_CUDA_CHECK(cudaMemcpyAsync(ids.data(), sampled_ids_.data(), ids.size() * 4,
                                      cudaMemcpyDeviceToHost, stream_));
  finish_timing();
  profile_.clear();
  routing_.clear();
  return ids;
}

}  // namespace inferlab::engine::cuda
