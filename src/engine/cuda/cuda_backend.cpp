// The bf16 CUDA backend: a forward pass over a packed batch of sequences (prefill chunks and
// decodes together), kernel by kernel, with the paged KV cache on the device.
#include "engine/cuda_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "engine/cuda/attention.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/device_weights.hpp"
#include "engine/cuda/gemm.hpp"
#include "engine/cuda/kernel_timer.hpp"
#include "engine/cuda/layer_kernels.hpp"
#include "engine/cuda/sampling_kernels.hpp"
#include "engine/forward_metadata.hpp"
#include "engine/rope.hpp"
#include "util/error.hpp"

namespace inferlab::engine {

namespace {

using cuda::bf16;
using cuda::DeviceBuffer;

// Rows of logits computed per LM-head GEMM (teacher forcing asks for many; they go to the host
// in chunks of this size).
constexpr int64_t kLogitRowsPerChunk = 256;

int64_t logit_rows_capacity(const CudaBackendOptions& options) {
  return std::max(kLogitRowsPerChunk, options.max_sequences);
}

int64_t max_context(const LlamaConfig& config) {
  return config.model.max_position_embeddings > 0 ? config.model.max_position_embeddings : 131072;
}

// Activation, logits and scratch bytes for `options` (what the backend allocates besides the
// weights and the KV cache).
struct Buffers {
  int64_t activation_elements = 0;  // bf16
  int64_t logits_elements = 0;      // fp32
  size_t attention_workspace = 0;
  size_t sampling_workspace = 0;
  int64_t metadata_elements = 0;  // int32
  static constexpr size_t kGemmWorkspace = size_t{32} << 20;
  int64_t bytes() const {
    return 2 * activation_elements + 4 * logits_elements +
           static_cast<int64_t>(attention_workspace + sampling_workspace + kGemmWorkspace) +
           4 * metadata_elements;
  }
};

Buffers buffers_for(const LlamaConfig& config, const CudaBackendOptions& o) {
  const ModelConfig& m = config.model;
  const int64_t t = o.max_batch_tokens, rows = logit_rows_capacity(o);
  Buffers b;
  // residual, normed, qkv, attention out, projection out, gate/up, activation, LM-head rows
  b.activation_elements =
      t * (3 * m.hidden_size + (m.q_dim() + 2 * m.kv_dim()) + m.q_dim() + 3 * m.intermediate_size) +
      rows * m.hidden_size;
  b.logits_elements = rows * m.vocab_size;
  const int64_t context = max_context(config);
  b.attention_workspace = cuda::paged_attention_workspace_bytes(
      static_cast<int>(std::min(o.max_sequences, o.max_batch_tokens)),
      static_cast<int>(m.num_heads), static_cast<int>(m.head_dim), static_cast<int>(context));
  b.sampling_workspace = cuda::sampling_workspace_bytes(static_cast<int>(o.max_sequences),
                                                        static_cast<int>(m.vocab_size));
  const int64_t blocks_per_seq = (context + o.block_size - 1) / o.block_size;
  b.metadata_elements = 4 * t + 2 * o.max_sequences + 1 + rows + o.max_sequences * blocks_per_seq;
  return b;
}

class CudaBackend final : public Backend {
 public:
  CudaBackend(const LlamaConfig& config, const TensorSource& source,
              const CudaBackendOptions& options, int64_t kv_blocks);
  ~CudaBackend() override {
    for (auto& [shape, graph] : graphs_) cudaGraphExecDestroy(graph);
    cudaStreamDestroy(stream_);
  }

  const LlamaConfig& config() const override { return config_; }
  const KvCacheLayout& kv_layout() const override { return layout_; }
  ForwardResult forward(const ForwardBatch& batch) override;
  std::vector<int32_t> forward_sample(const ForwardBatch& batch,
                                      std::span<const SampleSpec> specs) override;
  double last_forward_device_s() const override { return last_device_s_; }
  void set_profiling(bool on) override { timer_.set_enabled(on); }
  std::vector<KernelClassTime> last_forward_profile() const override { return profile_; }

 private:
  // Everything up to the LM head's input: metadata to the device, embedding, the layers and the
  // final norm (into normed_; logit_rows_ then points at the wanted rows' indices on the device).
  void run_model(const ForwardMetadata& meta);
  // run_model's halves: the metadata to the device (a copy a graph cannot hold), and every
  // launch after it (what a graph captures).
  void upload_metadata(const ForwardMetadata& meta);
  void launch_model(const ForwardMetadata& meta);
  // forward_sample of a decode-only batch by replaying (capturing first if new) the graph of
  // its padded shape.
  std::vector<int32_t> decode_with_graph(const ForwardMetadata& meta,
                                         std::span<const SampleSpec> specs);
  void upload_sampling(std::span<const SampleSpec> specs, size_t rows);
  // Logits of the wanted rows [first, first + count) into logits_ (fp32); count at most the
  // capacity of lm_rows_ and logits_.
  void lm_head(int64_t first, int64_t count);
  void finish_timing();

  LlamaConfig config_;
  CudaBackendOptions options_;
  KvCacheLayout layout_;
  cudaStream_t stream_ = nullptr;
  cuda::DeviceWeights weights_;
  cuda::LtGemm gemm_;
  DeviceBuffer<bf16> k_cache_, v_cache_;
  DeviceBuffer<float> inv_freq_;
  DeviceBuffer<bf16> residual_, normed_, qkv_, attn_, proj_, gate_up_, act_, lm_rows_;
  DeviceBuffer<float> logits_;
  DeviceBuffer<unsigned char> attention_workspace_, sampling_workspace_;
  DeviceBuffer<int32_t> metadata_, sampled_ids_;
  DeviceBuffer<cuda::RowSampling> row_sampling_;
  cuda::KernelTimer timer_;
  const int32_t* logit_rows_ = nullptr;
  std::map<std::pair<int32_t, int32_t>, cudaGraphExec_t> graphs_;  // (padded, bound) → graph
  double last_device_s_ = -1;
  std::vector<KernelClassTime> profile_;
};

CudaBackend::CudaBackend(const LlamaConfig& config, const TensorSource& source,
                         const CudaBackendOptions& options, int64_t kv_blocks)
    : config_(config), options_(options), weights_(config, source) {
  const ModelConfig& m = config_.model;
  layout_ = {m.num_layers, m.num_kv_heads, m.head_dim, options.block_size, kv_blocks};
  INFERLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  if (!options.gemv) gemm_.set_gemv(false);
  // One block past the pool: the scratch block padding sequences of a graph write into.
  const auto cache_elements = static_cast<size_t>((layout_.slots() + layout_.block_size) *
                                                  layout_.elements_per_token() / 2);
  k_cache_ = DeviceBuffer<bf16>(cache_elements);
  v_cache_ = DeviceBuffer<bf16>(cache_elements);

  const auto inv_freq_double = rope_inverse_frequencies(config_.rope, m.head_dim);
  std::vector<float> inv_freq(inv_freq_double.begin(), inv_freq_double.end());
  inv_freq_ = DeviceBuffer<float>(inv_freq.size());
  inv_freq_.upload(inv_freq.data(), inv_freq.size());

  const Buffers b = buffers_for(config_, options_);
  const auto t = static_cast<size_t>(options.max_batch_tokens);
  const auto rows = static_cast<size_t>(logit_rows_capacity(options));
  residual_ = DeviceBuffer<bf16>(t * m.hidden_size);
  normed_ = DeviceBuffer<bf16>(t * m.hidden_size);
  qkv_ = DeviceBuffer<bf16>(t * (m.q_dim() + 2 * m.kv_dim()));
  attn_ = DeviceBuffer<bf16>(t * m.q_dim());
  proj_ = DeviceBuffer<bf16>(t * m.hidden_size);
  gate_up_ = DeviceBuffer<bf16>(t * 2 * m.intermediate_size);
  act_ = DeviceBuffer<bf16>(t * m.intermediate_size);
  lm_rows_ = DeviceBuffer<bf16>(rows * m.hidden_size);
  logits_ = DeviceBuffer<float>(rows * m.vocab_size);
  attention_workspace_ = DeviceBuffer<unsigned char>(b.attention_workspace);
  sampling_workspace_ = DeviceBuffer<unsigned char>(b.sampling_workspace);
  metadata_ = DeviceBuffer<int32_t>(static_cast<size_t>(b.metadata_elements));
  sampled_ids_ = DeviceBuffer<int32_t>(static_cast<size_t>(options.max_sequences));
  row_sampling_ = DeviceBuffer<cuda::RowSampling>(static_cast<size_t>(options.max_sequences));
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

void CudaBackend::launch_model(const ForwardMetadata& meta) {
  const ModelConfig& m = config_.model;
  const int tokens = meta.tokens();
  const auto o = meta.offsets();
  const int32_t* dev = metadata_.data();

  const int hidden = static_cast<int>(m.hidden_size), inter = static_cast<int>(m.intermediate_size);
  const int heads = static_cast<int>(m.num_heads), kv_heads = static_cast<int>(m.num_kv_heads);
  const int d = static_cast<int>(m.head_dim);
  const int64_t q_dim = m.q_dim(), qkv_dim = m.q_dim() + 2 * m.kv_dim();
  const auto eps = static_cast<float>(config_.rms_norm_eps);
  const double t = tokens;
  const size_t layer_cache =
      static_cast<size_t>((layout_.slots() + layout_.block_size) * m.kv_dim());

  cuda::embedding_gather(weights_.embed_tokens, dev + o.token_ids, tokens, hidden, residual_.data(),
                         stream_);
  timer_.mark("embedding", 4.0 * t * hidden);

  cuda::PagedAttentionParams attention;
  attention.q = qkv_.data();
  attention.q_row_stride = qkv_dim;
  attention.block_tables = dev + o.block_tables;
  attention.block_table_stride = meta.block_table_stride;
  attention.query_start = dev + o.query_start;
  attention.context_lens = dev + o.context_lens;
  attention.num_seqs = meta.sequences();
  attention.num_tokens = tokens;
  attention.max_query_len = meta.max_query_len;
  attention.single_query_seqs = meta.single_query_seqs;
  attention.max_context_len = meta.max_context_len;
  attention.num_heads = heads;
  attention.num_kv_heads = kv_heads;
  attention.head_dim = d;
  attention.block_size = static_cast<int>(layout_.block_size);
  attention.sliding_window = static_cast<int>(config_.sliding_window);
  attention.softmax_scale = 1.0f / std::sqrt(static_cast<float>(d));
  attention.out = attn_.data();
  attention.workspace = attention_workspace_.data();
  attention.workspace_bytes = attention_workspace_.bytes();
  // For the roofline columns: keys and values are read from HBM once per sequence (the query
  // tiles of a prefill share them through L2), and each query attends to its causal prefix.
  double context_sum = 0, attended_sum = 0;
  for (int s = 0; s < meta.sequences(); ++s) {
    const double q_len = meta.query_start[s + 1] - meta.query_start[s];
    const double cached = meta.context_lens[s] - q_len;
    context_sum += meta.context_lens[s];
    attended_sum += q_len * cached + q_len * (q_len + 1) / 2;
  }
  const double gemm_act = 2.0 * t;  // bytes per feature of a GEMM's input or output rows

  for (int64_t layer = 0; layer < m.num_layers; ++layer) {
    const cuda::DeviceLayer& w = weights_.layers[static_cast<size_t>(layer)];
    if (layer == 0) {
      cuda::rms_norm(residual_.data(), w.input_norm, tokens, hidden, eps, normed_.data(), stream_);
      timer_.mark("norm", 4.0 * t * hidden);
    } else {
      cuda::add_rms_norm(residual_.data(), proj_.data(), w.input_norm, tokens, hidden, eps,
                         normed_.data(), stream_);
      timer_.mark("norm", 8.0 * t * hidden);
    }
    gemm_.linear(normed_.data(), tokens, w.qkv, w.qkv_bias, hidden, qkv_dim, qkv_.data(), false,
                 stream_);
    timer_.mark("gemm_qkv", 2.0 * qkv_dim * hidden + gemm_act * (hidden + qkv_dim),
                2.0 * t * qkv_dim * hidden);
    bf16* k_layer = k_cache_.data() + layer * layer_cache;
    bf16* v_layer = v_cache_.data() + layer * layer_cache;
    cuda::KvLayerCache cache{DType::bf16, k_layer, v_layer, nullptr, nullptr};
    cuda::rope_kv_write(qkv_.data(), tokens, heads, kv_heads, d, dev + o.positions, dev + o.slots,
                        inv_freq_.data(), cache, stream_);
    timer_.mark("rope_kv_write", gemm_act * (qkv_dim + m.q_dim() + 2 * m.kv_dim()));
    attention.cache = cache;
    cuda::paged_attention(attention, stream_);
    timer_.mark("attention", 4.0 * context_sum * m.kv_dim() + gemm_act * 2 * q_dim,
                4.0 * attended_sum * q_dim);
    gemm_.linear(attn_.data(), tokens, w.o_proj, nullptr, q_dim, hidden, proj_.data(), false,
                 stream_);
    timer_.mark("gemm_o", 2.0 * hidden * q_dim + gemm_act * (q_dim + hidden),
                2.0 * t * hidden * q_dim);
    cuda::add_rms_norm(residual_.data(), proj_.data(), w.post_norm, tokens, hidden, eps,
                       normed_.data(), stream_);
    timer_.mark("norm", 8.0 * t * hidden);
    gemm_.linear(normed_.data(), tokens, w.gate_up, nullptr, hidden, 2 * inter, gate_up_.data(),
                 false, stream_);
    timer_.mark("gemm_gate_up", 4.0 * inter * hidden + gemm_act * (hidden + 2 * inter),
                4.0 * t * inter * hidden);
    cuda::silu_mul_halves(gate_up_.data(), tokens, inter, act_.data(), stream_);
    timer_.mark("silu_mul", gemm_act * 3 * inter);
    gemm_.linear(act_.data(), tokens, w.down, nullptr, inter, hidden, proj_.data(), false, stream_);
    timer_.mark("gemm_down", 2.0 * hidden * inter + gemm_act * (inter + hidden),
                2.0 * t * hidden * inter);
  }
  cuda::add_rms_norm(residual_.data(), proj_.data(), weights_.final_norm, tokens, hidden, eps,
                     normed_.data(), stream_);
  timer_.mark("norm", 8.0 * t * hidden);
  logit_rows_ = dev + o.logit_rows;
}

void CudaBackend::lm_head(int64_t first, int64_t count) {
  const ModelConfig& m = config_.model;
  // The wanted rows of the final norm's output, gathered, then the vocabulary projection.
  cuda::gather_rows(normed_.data(), logit_rows_ + first, static_cast<int>(count),
                    static_cast<int>(m.hidden_size), lm_rows_.data(), stream_);
  timer_.mark("embedding", 4.0 * count * m.hidden_size);
  gemm_.linear(lm_rows_.data(), count, weights_.lm_head, nullptr, m.hidden_size, m.vocab_size,
               logits_.data(), true, stream_);
  timer_.mark(
      "lm_head",
      2.0 * m.vocab_size * m.hidden_size + count * (2.0 * m.hidden_size + 4.0 * m.vocab_size),
      2.0 * count * m.vocab_size * m.hidden_size);
}

void CudaBackend::finish_timing() {
  timer_.end(stream_);
  INFERLAB_CUDA_CHECK(cudaStreamSynchronize(stream_));
  last_device_s_ = timer_.total_s();
  profile_ = timer_.classes();
}

ForwardResult CudaBackend::forward(const ForwardBatch& batch) {
  validate_batch(batch, config_, layout_);
  const ForwardMetadata meta = build_forward_metadata(batch, layout_, /*last_only=*/false);
  const int64_t rows = static_cast<int64_t>(meta.logit_rows.size());
  run_model(meta);
  ForwardResult result;
  result.vocab_size = config_.model.vocab_size;
  result.first_row = meta.first_row;
  result.logits.resize(static_cast<size_t>(rows * result.vocab_size));
  for (int64_t first = 0; first < rows; first += kLogitRowsPerChunk) {
    const int64_t count = std::min(kLogitRowsPerChunk, rows - first);
    lm_head(first, count);
    INFERLAB_CUDA_CHECK(cudaMemcpyAsync(
        result.logits.data() + first * result.vocab_size, logits_.data(),
        static_cast<size_t>(count * result.vocab_size) * 4, cudaMemcpyDeviceToHost, stream_));
  }
  finish_timing();
  return result;
}

void CudaBackend::upload_sampling(std::span<const SampleSpec> specs, size_t rows) {
  std::vector<cuda::RowSampling> params(rows);  // padding rows: greedy
  for (size_t i = 0; i < specs.size(); ++i) {
    const SampleSpec& spec = specs[i];
    params[i] = {static_cast<float>(spec.params.temperature), static_cast<int>(spec.params.top_k),
                 static_cast<float>(spec.params.top_p), spec.uniform};
  }
  INFERLAB_CUDA_CHECK(cudaMemcpyAsync(row_sampling_.data(), params.data(),
                                      params.size() * sizeof(cuda::RowSampling),
                                      cudaMemcpyHostToDevice, stream_));
}

std::vector<int32_t> CudaBackend::forward_sample(const ForwardBatch& batch,
                                                 std::span<const SampleSpec> specs) {
  if (specs.size() != batch.sequences.size()) {
    throw std::invalid_argument("forward_sample: one SampleSpec per sequence is needed");
  }
  if (!options_.sample_on_device) return Backend::forward_sample(batch, specs);
  validate_batch(batch, config_, layout_);
  const ForwardMetadata meta = build_forward_metadata(batch, layout_, /*last_only=*/true);
  if (options_.cuda_graphs && meta.max_query_len == 1) return decode_with_graph(meta, specs);
  upload_sampling(specs, specs.size());
  run_model(meta);
  const auto rows = static_cast<int>(meta.logit_rows.size());
  lm_head(0, rows);
  cuda::sample_rows(logits_.data(), rows, static_cast<int>(config_.model.vocab_size),
                    row_sampling_.data(), sampled_ids_.data(), sampling_workspace_.data(),
                    sampling_workspace_.bytes(), stream_);
  timer_.mark("sampling", 4.0 * rows * config_.model.vocab_size);
  std::vector<int32_t> ids(static_cast<size_t>(rows));
  INFERLAB_CUDA_CHECK(cudaMemcpyAsync(ids.data(), sampled_ids_.data(), ids.size() * 4,
                                      cudaMemcpyDeviceToHost, stream_));
  finish_timing();
  return ids;
}

std::vector<int32_t> CudaBackend::decode_with_graph(const ForwardMetadata& meta,
                                                    std::span<const SampleSpec> specs) {
  // The shape: sequences padded to a power of two (at most max_sequences), contexts bounded by
  // a power of two of at least 256 (at most the model's context).
  auto next_pow2 = [](int64_t n) {
    int64_t p = 1;
    while (p < n) p *= 2;
    return p;
  };
  const auto padded =
      static_cast<int32_t>(std::min<int64_t>(next_pow2(meta.sequences()), options_.max_sequences));
  const auto bound = static_cast<int32_t>(std::min<int64_t>(
      std::max<int64_t>(256, next_pow2(meta.max_context_len)), max_context(config_)));
  const auto stride = static_cast<int32_t>(layout_.blocks_for(bound));
  const ForwardMetadata shaped = pad_decode_metadata(
      meta, padded, stride, bound, static_cast<int32_t>(layout_.num_blocks), layout_.block_size);
  upload_sampling(specs, static_cast<size_t>(padded));
  upload_metadata(shaped);
  const bool profiling = timer_.enabled();
  timer_.set_enabled(false);  // per-kernel events cannot sit inside a graph
  cudaGraphExec_t& graph = graphs_[{padded, bound}];
  if (graph == nullptr) {
    cudaGraph_t captured = nullptr;
    INFERLAB_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    try {
      launch_model(shaped);
      lm_head(0, padded);
      cuda::sample_rows(logits_.data(), padded, static_cast<int>(config_.model.vocab_size),
                        row_sampling_.data(), sampled_ids_.data(), sampling_workspace_.data(),
                        sampling_workspace_.bytes(), stream_);
    } catch (...) {
      cudaStreamEndCapture(stream_, &captured);  // leaves the stream usable
      if (captured != nullptr) cudaGraphDestroy(captured);
      graphs_.erase({padded, bound});
      timer_.set_enabled(profiling);
      throw;
    }
    INFERLAB_CUDA_CHECK(cudaStreamEndCapture(stream_, &captured));
    INFERLAB_CUDA_CHECK(cudaGraphInstantiate(&graph, captured, 0));
    cudaGraphDestroy(captured);
  }
  timer_.begin(stream_);
  INFERLAB_CUDA_CHECK(cudaGraphLaunch(graph, stream_));
  std::vector<int32_t> ids(static_cast<size_t>(meta.sequences()));
  INFERLAB_CUDA_CHECK(cudaMemcpyAsync(ids.data(), sampled_ids_.data(), ids.size() * 4,
                                      cudaMemcpyDeviceToHost, stream_));
  finish_timing();
  timer_.set_enabled(profiling);
  profile_.clear();
  return ids;
}

std::string gib(int64_t bytes) {
  return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1 << 30));
}

}  // namespace

int64_t cuda_backend_fixed_bytes(const LlamaConfig& config, const CudaBackendOptions& options) {
  return cuda::DeviceWeights::bytes_for(config) + buffers_for(config, options).bytes();
}

std::unique_ptr<Backend> make_cuda_backend(const LlamaConfig& config, const TensorSource& source,
                                           const CudaBackendOptions& options) {
  if (!cuda_device_available()) {
    throw InputError("--device cuda: no CUDA GPU is visible on this machine; use --device cpu");
  }
  if (options.block_size < 1 || options.block_size > 1024 || options.max_batch_tokens < 1 ||
      options.max_sequences < 1 || options.max_sequences > 4096 ||
      !(options.gpu_memory_utilization > 0 && options.gpu_memory_utilization <= 1)) {
    throw InputError(
        "CUDA backend options out of range (block size 1-1024, batch tokens ≥ 1, "
        "sequences 1-4096, GPU memory utilization in (0, 1])");
  }
  size_t free_bytes = 0, total_bytes = 0;
  INFERLAB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const int64_t weights = cuda::DeviceWeights::bytes_for(config);
  const int64_t buffers = buffers_for(config, options).bytes();
  // The budget is a share of the whole GPU, less what other processes already hold.
  const auto budget =
      static_cast<int64_t>(options.gpu_memory_utilization * static_cast<double>(total_bytes)) -
      static_cast<int64_t>(total_bytes - free_bytes);
  const int64_t bytes_per_block = 2 * options.block_size * config.model.num_layers *
                                  config.model.num_kv_heads * config.model.head_dim * 2;
  int64_t blocks = (budget - weights - buffers) / bytes_per_block;
  if (options.max_kv_tokens > 0) {
    blocks =
        std::min(blocks, (options.max_kv_tokens + options.block_size - 1) / options.block_size);
  }
  if (blocks < 1) {
    throw InputError(fmt::format(
        "{} does not fit on this GPU: weights {} + activations and workspaces {} + one KV block "
        "{} exceed {} ({:.0f}% of {}, less {} already in use); lower --max-batch-tokens or raise "
        "--gpu-memory-utilization",
        config.model.name, gib(weights), gib(buffers), gib(bytes_per_block),
        gib(std::max<int64_t>(budget, 0)), 100 * options.gpu_memory_utilization, gib(total_bytes),
        gib(total_bytes - free_bytes)));
  }
  return std::make_unique<CudaBackend>(config, source, options, blocks);
}

}  // namespace inferlab::engine
