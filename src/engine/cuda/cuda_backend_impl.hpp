#pragma once
// The CUDA backend's class: a forward pass over a packed batch of sequences (prefill chunks and
// decodes together), kernel by kernel, with the paged KV cache on the device. Internal to the
// backend (cuda_backend.cpp: passes and graphs; cuda_forward.cpp: the layers' launches;
// cuda_backend_factory.cpp: memory budget, calibration, construction).
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "engine/backend.hpp"
#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/decode_layers.hpp"
#include "engine/cuda/device_weights.hpp"
#include "engine/cuda/kernel_timer.hpp"
#include "engine/cuda/kv_storage.hpp"
#include "engine/cuda/moe_kernels.hpp"
#include "engine/cuda/pinned_pool.hpp"
#include "engine/cuda/projection.hpp"
#include "engine/cuda/projection_lt.hpp"
#include "engine/cuda/rank_collectives.hpp"
#include "engine/cuda/sampling_kernels.hpp"
#include "engine/cuda_backend.hpp"
#include "engine/forward_metadata.hpp"
#include "engine/quant/quantized_model.hpp"
#include "engine/quant/smoothquant.hpp"
#include "model/engine_moe_rules.hpp"

namespace inferlab::engine::cuda {

// Rows of logits computed per LM-head GEMM (teacher forcing asks for many; they go to the host
// in chunks of this size).
constexpr int64_t kLogitRowsPerChunk = 256;

int64_t logit_rows_capacity(const CudaBackendOptions& options);
int64_t max_context(const LlamaConfig& config);

// Activation, logits and scratch sizes for `options`: what the backend allocates besides the
// weights and the KV cache (the constructor allocates exactly these; the factory checks their
// bytes against the GPU's memory first).
struct BackendBuffers {
  // bf16 elements of each activation buffer: residual stream, normed input, fused QKV output,
  // attention output, projection output, gate/up output, SiLU×mul output, LM-head input rows.
  int64_t residual = 0, normed = 0, qkv = 0, attn = 0, proj = 0, gate_up = 0, act = 0;
  int64_t lm_rows = 0;
  // A mixture of experts: slots (tokens · experts per token) a pass may route, the bf16
  // elements of each of the gathered expert inputs and the experts' outputs (slots · hidden),
  // and the routing's int32 and fp32 elements (moe_kernels.hpp's MoeRouting).
  int64_t moe_slots = 0, moe_rows = 0, moe_ints = 0, moe_floats = 0;
  int64_t logits_elements = 0;  // fp32
  // The Projector's sizes: most rows of a call, widest input and output.
  int64_t projector_rows = 0, projector_in = 0, projector_out = 0;
  size_t attention_workspace = 0;
  size_t sampling_workspace = 0;
  size_t projection_workspace = 0;
  int64_t metadata_elements = 0;  // int32
  int64_t sampled_rows = 0;       // rows sampled on the device per pass: an id and a RowSampling
  // Tensor parallelism: this rank's logits of its vocab shard, then every rank's gathered (fp32).
  int64_t tp_logits_elements = 0;
  int64_t activation_elements() const;
  int64_t bytes() const;
};
BackendBuffers buffers_for(const LlamaConfig& config, const CudaBackendOptions& options);
// The attention workspace: the decode kernel's split partials for every sequence at `context`,
// and for a by-token pass of up to kTokenViewMaxTokens tokens (model/engine_decode_plan.hpp).
size_t attention_workspace_bytes(const ModelConfig& model, const CudaBackendOptions& options,
                                 int64_t context);
// The tensor-parallel ranks `options` runs among (1 without collectives) and the LM head's rows
// on each (the vocabulary on one GPU; ceil(vocab / ranks) under tensor parallelism).
int64_t tensor_parallel_ranks(const CudaBackendOptions& options);
int64_t lm_head_rows(const LlamaConfig& config, const CudaBackendOptions& options);

// The factory's steps (cuda_backend_factory.cpp), shared with the tensor-parallel one:
// the options as the backend runs them (a GPTQ checkpoint's own int4 groups); InputError for
// options out of range or a format the model cannot run; and the KV blocks that fit beside the
// weights and buffers on the current GPU (InputError when not even one does).
CudaBackendOptions resolved_options(const LlamaConfig& config, CudaBackendOptions options);
void check_backend_options(const LlamaConfig& config, const CudaBackendOptions& options);
int64_t kv_blocks_that_fit(const LlamaConfig& config, const CudaBackendOptions& options);
class CudaBackend;
// The GEMM warm-up the options ask for (warm_gemm_rows, or cuBLASLt's timed choice), once built.
void warm_gemms_as_asked(CudaBackend& backend, const CudaBackendOptions& options);

class CudaBackend final : public Backend {
 public:
  CudaBackend(const LlamaConfig& config, const WeightLoader& loader,
              const CudaBackendOptions& options, int64_t kv_blocks);
  ~CudaBackend() override;

  const LlamaConfig& config() const override { return config_; }
  const KvCacheLayout& kv_layout() const override { return layout_; }
  ForwardResult forward(const ForwardBatch& batch) override;
  std::vector<int32_t> forward_sample(const ForwardBatch& batch,
                                      std::span<const SampleSpec> specs) override;
  std::vector<int32_t> forward_sample_rows(const ForwardBatch& batch,
                                           std::span<const SampleSpec> row_specs) override;
  double last_forward_device_s() const override { return last_device_s_; }
  void set_profiling(bool on) override { timer_.set_enabled(on); }
  std::vector<KernelClassTime> last_forward_profile() const override { return profile_; }
  RoutingStats last_forward_routing() const override { return routing_; }
  void fill_kv_cache_random(uint64_t seed) override;
  // Every projection once at every row count from 1 to max_rows (CudaBackendOptions::
  // warm_gemm_rows) and the LM head at every count its buffer takes, layer 0's weights standing
  // for all (same shapes, same alignment), on the buffers the passes use; with cuBLASLt's timed
  // choice on (lt_tuning_requested) this is also where each bucket of rows is timed. Writes only
  // activation scratch: the KV cache is untouched.
  void warm_gemms(int64_t max_rows);
  size_t gemm_plans() const { return projector_.lt_plans(); }
  int64_t persistent_decode_passes() const { return persistent_passes_; }
  int64_t kv_block_host_bytes() const override {
    return KvStorage::bytes_per_block(layout_, kv_.format());
  }
  std::unique_ptr<KvHostCopy> copy_kv_blocks_to_host(std::span<const int32_t> blocks) override;
  void copy_kv_blocks_from_host(std::span<const int32_t> blocks,
                                std::span<const std::byte> host) override;

  // SmoothQuant's calibration: while on, every forward pass (unfused, eager) merges the absolute
  // maxima of the QKV and gate/up inputs; the weights' column maxima are taken when it starts.
  void start_smoothquant_stats();
  SmoothQuantStats finish_smoothquant_stats();

 private:
  // Everything up to the LM head's input: metadata to the device, embedding, the layers and the
  // final norm (into normed_; logit_rows_ then points at the wanted rows' indices on the device).
  void run_model(const ForwardMetadata& meta);
  // run_model's halves: the metadata to the device (a copy a graph cannot hold), and every
  // launch after it (what a graph captures).
  void upload_metadata(const ForwardMetadata& meta);
  void launch_model(const ForwardMetadata& meta);
  // One layer's launches, unfused (any batch) or with the GEMV fusions (decode-sized batches).
  void launch_layer(int64_t layer, const ForwardMetadata& meta, PagedAttentionParams& attention,
                    bool fused);
  // Its two blocks. `stats` (calibration: column absmax of the normed inputs; nullptr when not
  // collecting) is where the block's norm output goes: the attention block's hidden_size floats,
  // then the MLP block's.
  void launch_attention_block(int64_t layer, const ForwardMetadata& meta,
                              PagedAttentionParams& attention, bool fused, float* stats);
  void launch_mlp_block(int64_t layer, int tokens, bool fused, float* stats);
  // A mixture-of-experts layer's MLP block (cuda_moe.cpp): norm, routing, the experts in
  // moe_form's form, the weighted combine into proj_.
  void launch_moe_block(int64_t layer, int tokens);
  // The experts' form for a pass of `tokens`: model/engine_moe_rules.hpp's, or the A/B switch's
  // (options_.tuning.moe_gemm).
  MoeExpertForm moe_form(int tokens) const;
  // Whether a pass of `tokens` runs the experts without reading their row counts on the host
  // (every pass a graph replays does); the per-expert cuBLASLt GEMMs read them.
  bool moe_capturable(int tokens) const;
  // The experts of launch_moe_block by slot (the slot or the grouped kernels), or by a cuBLASLt
  // GEMM per expert over `offsets` (read on the host); their profile marks priced with these
  // bytes.
  void launch_moe_decode_experts(const DeviceLayer& w, MoeExpertForm form, int tokens,
                                 const MoeRouting& routing, double gate_up_bytes,
                                 double down_bytes);
  void launch_moe_expert_gemms(const DeviceLayer& w, int tokens,
                               const std::vector<int32_t>& offsets, const MoeRouting& routing,
                               double gate_up_bytes, double down_bytes);
  MoeRouting moe_routing();
  // A profiled pass's expert ids of `layer` kept on the device (routing_ids_), and read back into
  // routing_ once the pass is done (collect_routing, from finish_timing).
  void record_routing(int64_t layer, const int32_t* expert_ids, int slots);
  void collect_routing();
  // The O and down GEMVs' epilogue on `input`: the residual add, or under tensor parallelism
  // what makes the all-reduce after it complete the add.
  GemvFused row_parallel_epilogue(const __nv_bfloat16* input);
  // Whether this many tokens take the fused GEMV forms.
  bool fused_for(int tokens) const;
  // The persistent decode kernel (decode_layers.hpp; cuda_decode_layers.cpp): its layer table
  // and scratch, set up at construction where the model, the options and the GPU take it;
  // whether a pass of `meta` runs its layers there (one sequence, one token, not profiled); and
  // that launch, the layers of launch_model's fused form in one kernel.
  void setup_persistent_decode();
  bool persistent_for(const ForwardMetadata& meta) const;
  void launch_persistent_layers(const ForwardMetadata& meta);
  // The trace of the last persistent pass to options_.tuning.decode_trace (when set).
  void write_persistent_trace();
  // The graph shape a pass of `meta` replays (sampling one row per sequence, or every row when
  // all_rows), or none: graphs off, a profiled pass, sequences of different lengths or of more
  // than kGraphMaxQueryTokens tokens (model/engine_decode_plan.hpp), or a padded pass past the
  // buffers.
  std::optional<GraphShape> graph_shape_for(const ForwardMetadata& meta, bool all_rows) const;
  // The pass replayed (captured first if new) from the graph of `shape`; the sampled ids of
  // meta's logit rows.
  std::vector<int32_t> run_graphed(const ForwardMetadata& meta, std::span<const SampleSpec> specs,
                                   const GraphShape& shape);
  void upload_sampling(std::span<const SampleSpec> specs, size_t rows);
  // Logits of the wanted rows [first, first + count) into logits_ (fp32); count at most the
  // capacity of lm_rows_ and logits_.
  void lm_head(int64_t first, int64_t count);
  // Tensor parallelism: the row-parallel projection's partial sums (tokens × hidden at `data`)
  // summed over the ranks; nothing on one GPU.
  void all_reduce(__nv_bfloat16* data, int tokens);
  // Whether this backend's logits go to the host (rank 0 of a group, or the only GPU).
  bool copies_logits() const;
  void finish_timing();

  LlamaConfig config_;
  CudaBackendOptions options_;
  BackendBuffers sizes_;  // buffers_for(config_, options_), before the Projector that uses it
  KvCacheLayout layout_;
  cudaStream_t stream_ = nullptr;
  DeviceWeights weights_;
  Projector projector_;
  KvStorage kv_;
  // Pinned host buffers for preemption by swap, kept for reuse (engine/cuda/pinned_pool.hpp).
  std::shared_ptr<PinnedPool> swap_space_ = std::make_shared<PinnedPool>();
  DeviceBuffer<float> inv_freq_;
  DeviceBuffer<__nv_bfloat16> residual_, normed_, qkv_, attn_, proj_, gate_up_, act_, lm_rows_;
  DeviceBuffer<__nv_bfloat16> moe_in_, moe_out_;  // expert inputs (gathered), expert outputs
  DeviceBuffer<int32_t> moe_ints_;
  DeviceBuffer<float> moe_floats_;
  DeviceBuffer<float> logits_;
  DeviceBuffer<float> tp_logits_;  // tensor parallelism: this rank's shard, then every rank's
  DeviceBuffer<unsigned char> attention_workspace_, sampling_workspace_;
  DeviceBuffer<int32_t> metadata_, sampled_ids_;
  DeviceBuffer<RowSampling> row_sampling_;
  DeviceBuffer<float> stats_;  // SmoothQuant: [layer][qkv input, gate/up input][hidden]
  PersistentDecodeShape persistent_shape_;
  DeviceBuffer<PersistentDecodeLayer> persistent_layers_;  // empty: the kernel is not used
  DeviceBuffer<float> persistent_partials_;
  DeviceBuffer<unsigned> persistent_counters_;
  int64_t persistent_passes_ = 0;
  DeviceBuffer<unsigned long long> persistent_trace_;  // when tuning.decode_trace is set
  KernelTimer timer_;
  const int32_t* logit_rows_ = nullptr;
  std::map<decltype(GraphShape{}.key()), cudaGraphExec_t> graphs_;  // GraphShape::key() → graph
  double last_device_s_ = -1;
  std::vector<KernelClassTime> profile_;
  RoutingStats routing_;               // a profiled pass's routing (launch_moe_block)
  DeviceBuffer<int32_t> routing_ids_;  // [layers][moe_slots], allocated by the first profiled pass
  int routing_slots_ = 0;              // slots a layer of the pass being recorded, 0: none
};

}  // namespace inferlab::engine::cuda
