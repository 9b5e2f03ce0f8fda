#pragma once
#include <memory>
#include <vector>

#include "engine/backend.hpp"
#include "engine/kv_cache.hpp"
#include "engine/llama_weights.hpp"
#include "engine/quant/formats.hpp"
#include "engine/quant/gptq_solver.hpp"
#include "engine/quant/smoothquant.hpp"

namespace inferlab::engine {

class HostCollectives;

// Receives every projection's input rows of a forward pass (GPTQ's calibration).
class ProjectionInputSink {
 public:
  virtual ~ProjectionInputSink() = default;
  virtual void add(int64_t layer, ProjectionInput which, const float* rows, int64_t count,
                   int64_t width) = 0;
};

// The fp32 reference forward pass of a Llama-family model, plain loops, one sequence after
// another: embedding gather, per layer RMSNorm → Q/K/V (+ bias) → RoPE → KV write into the
// paged cache → causal GQA attention over the cached prefix and the new tokens → O projection +
// residual → RMSNorm → SwiGLU MLP (or a mixture of SwiGLU experts, cpu/moe.hpp) + residual; final
// RMSNorm and the LM head (tied or not) on the last token of each sequence, or on every new token
// when asked.
//
// Quantization (the reference the GPU's quantized paths are checked against): the weights come
// already quantized and dequantized (apply_quantization); at run time, with fp8 weights or W8A8
// each GEMM's input row is quantized and dequantized per token (fake_quantize_row), and a
// quantized KV cache stores each (token, KV head) vector quantized and dequantized.
class CpuBackend : public Backend {
 public:
  // The cache holds num_blocks blocks of block_size tokens.
  CpuBackend(LlamaConfig config, LlamaWeights weights, int64_t block_size, int64_t num_blocks,
             QuantConfig quant = {});

  const LlamaConfig& config() const override { return config_; }
  const KvCacheLayout& kv_layout() const override { return cache_.layout(); }
  ForwardResult forward(const ForwardBatch& batch) override;
  RoutingStats last_forward_routing() const override { return routing_; }
  void fill_kv_cache_random(uint64_t seed) override { cache_.fill_random(seed); }
  int64_t kv_block_host_bytes() const override { return cache_.block_bytes(); }
  std::unique_ptr<KvHostCopy> copy_kv_blocks_to_host(std::span<const int32_t> blocks) override {
    check_swap_blocks(blocks, cache_.layout());
    return std::make_unique<HeapKvHostCopy>(cache_.copy_blocks_out(blocks));
  }
  void copy_kv_blocks_from_host(std::span<const int32_t> blocks,
                                std::span<const std::byte> host) override {
    check_swap_blocks(blocks, cache_.layout(), static_cast<int64_t>(host.size()),
                      cache_.block_bytes());
    cache_.copy_blocks_in(blocks, host);
  }
  const LlamaWeights& weights() const { return weights_; }
  const QuantConfig& quant() const { return quant_; }
  // While set, every forward pass merges the absolute maxima of the QKV and gate/up inputs into
  // `stats` (SmoothQuant's calibration); null stops it.
  void collect_smoothquant_stats(SmoothQuantStats* stats) { stats_ = stats; }
  // While set, every forward pass hands each layer's four projection inputs to `sink` (GPTQ's
  // calibration, cpu/gptq_calibration.hpp); null stops it.
  void collect_projection_inputs(ProjectionInputSink* sink) { inputs_ = sink; }
  // Makes this backend rank `rank` of a tensor-parallel group (built from rank_config and
  // shard_weights, engine/tp/shard.hpp): the O and down projections' partial outputs are
  // all-reduced through `group` before each residual add, and the LM head's vocab rows are
  // all-gathered into whole logits rows. `group`: threads of this process (HostCommunicator) or
  // processes (TcpCollectives).
  void join_group(HostCollectives* group, int rank) {
    group_ = group;
    rank_ = rank;
  }

 private:
  // Runs one chunk and appends its logits rows.
  void forward_chunk(const SequenceChunk& chunk, std::vector<float>& logits);

  LlamaConfig config_;
  LlamaWeights weights_;
  CpuKvCache cache_;
  std::vector<double> inv_freq_;
  QuantConfig quant_;
  SmoothQuantStats* stats_ = nullptr;
  ProjectionInputSink* inputs_ = nullptr;
  HostCollectives* group_ = nullptr;
  int rank_ = 0;
  // A mixture of experts' choices in this pass, per layer, over all its chunks, and their
  // statistics once the pass is done.
  std::vector<std::vector<int32_t>> routed_experts_;
  RoutingStats routing_;
};

// Memory the CPU backend takes for `config` with a cache of `max_tokens` tokens: fp32 weights
// plus fp32 keys and values (the mapped checkpoint is released after loading). For "does not
// fit" messages before anything is allocated.
int64_t cpu_backend_bytes(const LlamaConfig& config, int64_t max_tokens, int64_t block_size = 16);

// The model as the CPU backend runs it under `quant`: weights quantized and dequantized in place
// (W8A8 migrated first, as make_cpu_backend says). Tensor parallelism shards the result.
void quantize_for_cpu(LlamaModel& model, int64_t block_size, const QuantConfig& quant,
                      const SmoothingFactors* smoothing = nullptr);

// A CPU backend whose cache holds `max_tokens` tokens (rounded up to whole blocks), running the
// model as `quant` says: bf16 keeps the fp32 weights; quantized weights are quantized and
// dequantized here, W8A8 first migrates with `smoothing` or, when null, with factors from a
// calibration pass of the unquantized model over quant.calibration_tokens random tokens.
std::unique_ptr<CpuBackend> make_cpu_backend(LlamaModel model, int64_t max_tokens,
                                             int64_t block_size = 16, const QuantConfig& quant = {},
                                             const SmoothingFactors* smoothing = nullptr);

// SmoothQuant statistics of `backend`'s model (weights from its own, inputs from one forward
// pass over `tokens` random token ids drawn from `seed`).
SmoothQuantStats calibrate_smoothquant(CpuBackend& backend, int64_t tokens, uint64_t seed);

}  // namespace inferlab::engine
