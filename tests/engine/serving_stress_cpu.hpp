#pragma once
// The CPU side of the serving stress harness: the fp32 reference backends, each held to the
// batch limits a CUDA backend of the same spec is built with, so that an iteration a GPU would
// refuse fails on the CPU too.
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/cpu/cpu_backend.hpp"
#include "engine/serving_stress_support.hpp"

namespace inferlab::engine::stress {

// Refuses a batch over `max_tokens` new tokens or `max_sequences` sequences as CudaBackend does
// (std::invalid_argument), and otherwise passes everything to the backend it holds.
class LimitedBackend final : public Backend {
 public:
  LimitedBackend(std::unique_ptr<Backend> inner, int64_t max_tokens, int64_t max_sequences)
      : inner_(std::move(inner)), max_tokens_(max_tokens), max_sequences_(max_sequences) {}
  const LlamaConfig& config() const override { return inner_->config(); }
  const KvCacheLayout& kv_layout() const override { return inner_->kv_layout(); }
  ForwardResult forward(const ForwardBatch& batch) override {
    check(batch);
    return inner_->forward(batch);
  }
  std::vector<int32_t> forward_sample(const ForwardBatch& batch,
                                      std::span<const SampleSpec> specs) override {
    check(batch);
    return inner_->forward_sample(batch, specs);
  }
  std::vector<int32_t> forward_sample_rows(const ForwardBatch& batch,
                                           std::span<const SampleSpec> row_specs) override {
    check(batch);
    return inner_->forward_sample_rows(batch, row_specs);
  }
  void fill_kv_cache_random(uint64_t seed) override { inner_->fill_kv_cache_random(seed); }
  int64_t kv_block_host_bytes() const override { return inner_->kv_block_host_bytes(); }
  std::unique_ptr<KvHostCopy> copy_kv_blocks_to_host(std::span<const int32_t> blocks) override {
    return inner_->copy_kv_blocks_to_host(blocks);
  }
  void copy_kv_blocks_from_host(std::span<const int32_t> blocks,
                                std::span<const std::byte> host) override {
    inner_->copy_kv_blocks_from_host(blocks, host);
  }

 private:
  void check(const ForwardBatch& batch) const {
    int64_t tokens = 0;
    for (const SequenceChunk& s : batch.sequences) tokens += static_cast<int64_t>(s.tokens.size());
    const auto sequences = static_cast<int64_t>(batch.sequences.size());
    if ((max_tokens_ > 0 && tokens > max_tokens_) ||
        (max_sequences_ > 0 && sequences > max_sequences_)) {
      throw std::invalid_argument(
          "a batch of " + std::to_string(tokens) + " tokens in " + std::to_string(sequences) +
          " sequences is over the backend's limits (" + std::to_string(max_tokens_) + " tokens, " +
          std::to_string(max_sequences_) + " sequences)");
    }
  }

  std::unique_ptr<Backend> inner_;
  int64_t max_tokens_, max_sequences_;
};

// The models of a CPU stress run: a target and, for draft_small, a smaller model of its
// vocabulary; draft_first_layer is the target's first layer with its embedding and head.
struct CpuStressModels {
  LlamaModel target, small;
};

class CpuBackendProvider : public BackendProvider {
 public:
  explicit CpuBackendProvider(CpuStressModels models) : models_(std::move(models)) {}
  Backend& get(const BackendSpec& spec) override {
    LlamaModel model = spec.role == ModelRole::draft_small ? models_.small : models_.target;
    if (spec.role == ModelRole::draft_first_layer) {
      nlohmann::json config = model.config.hf_config;
      config["num_hidden_layers"] = 1;
      model.config = parse_llama_config(config, "first layer", "stress draft");
      model.weights.layers.resize(1);
    }
    auto backend = make_cpu_backend(std::move(model), spec.kv_blocks * spec.block_size,
                                    spec.block_size, spec.quant);
    held_.push_back(std::make_unique<LimitedBackend>(std::move(backend), spec.max_batch_tokens,
                                                     spec.max_sequences));
    return *held_.back();
  }
  void reset() override { held_.clear(); }
  // The reference is exact: a token computed alone or batched, in a prefill chunk or a decode
  // step, is the same fp32 arithmetic in the same order.
  double tolerance(const QuantConfig&) const override { return 0.0; }

 private:
  CpuStressModels models_;
  std::vector<std::unique_ptr<Backend>> held_;
};

}  // namespace inferlab::engine::stress
