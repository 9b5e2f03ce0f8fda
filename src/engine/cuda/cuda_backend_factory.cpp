// Building the CUDA backend: option checks, the GPU memory budget (weights in their format,
// buffers, then as many KV blocks as fit), and for W8A8 the SmoothQuant calibration pass of the
// bf16 model before the quantized one loads.
#include <fmt/format.h>

#include <algorithm>

#include "engine/attention_head_dims.hpp"
#include "engine/cuda/cuda_backend_impl.hpp"
#include "engine/cuda/tp_cuda_backend.hpp"
#include "engine/moe_support.hpp"
#include "engine/quant/moe_quantization.hpp"
#include "engine/quant/quantized_model.hpp"
#include "util/error.hpp"

namespace inferlab::engine {

namespace {

std::string gib(int64_t bytes) {
  return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1 << 30));
}

}  // namespace

namespace cuda {

CudaBackendOptions resolved_options(const LlamaConfig& config, CudaBackendOptions options) {
  if (config.gptq && options.quant.weights == DType::int4) {
    options.quant.group_size = config.gptq->group_size;
  }
  return options;
}

void check_backend_options(const LlamaConfig& config, const CudaBackendOptions& options) {
  // First, so that the model is refused for what it is on any machine.
  if (const std::string refusal = cuda_moe_refusal(config); !refusal.empty()) {
    throw InputError(refusal);
  }
  check_moe_quantization(config, options.quant);
  if (!attention_head_dim_supported(config.model.head_dim)) {
    throw InputError(cuda_head_dim_refusal(config.model.name, config.model.head_dim));
  }
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
  const ModelConfig& m = config.model;
  check_quant_config(options.quant, m.hidden_size, m.intermediate_size, m.q_dim());
  // The LM head's logits of more rows than the GEMV takes (a pass sampling over 32 sequences,
  // the GEMM warm-up) go to cuBLASLt's FP8 or int8 GEMM, which needs outputs in multiples of 16.
  if (options.quant.quantized_activations() &&
      is_quantized_role(WeightRole::lm_head, options.quant) && m.vocab_size % 16 != 0) {
    throw InputError(fmt::format(
        "--weights {}{}: the quantized LM head needs a vocabulary that is a multiple of 16 (the "
        "tensor cores' FP8 and int8 GEMMs), and this model's is {}",
        dtype_name(options.quant.weights),
        options.quant.activations == DType::int8 ? " --activations int8" : "", m.vocab_size));
  }
}

int64_t kv_blocks_that_fit(const LlamaConfig& config, const CudaBackendOptions& options) {
  size_t free_bytes = 0, total_bytes = 0;
  INFERLAB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const int64_t weights =
      DeviceWeights::bytes_for(config, options.quant, lm_head_rows(config, options));
  const int64_t buffers = buffers_for(config, options).bytes();
  // The budget is a share of the whole GPU, less what other processes already hold.
  const auto budget =
      static_cast<int64_t>(options.gpu_memory_utilization * static_cast<double>(total_bytes)) -
      static_cast<int64_t>(total_bytes - free_bytes);
  const KvCacheLayout block = kv_cache_layout(config.model, options.block_size, 1);
  const int64_t bytes_per_block = KvStorage::bytes_per_block(block, options.quant.kv);
  // A draft model's room: its fixed bytes, and a block of its KV beside each of this pool's.
  int64_t blocks = (budget - weights - buffers - options.reserved_bytes) /
                   (bytes_per_block + options.reserved_bytes_per_kv_block);
  if (options.max_kv_tokens > 0) {
    blocks =
        std::min(blocks, (options.max_kv_tokens + options.block_size - 1) / options.block_size);
  }
  if (blocks < 1) {
    throw InputError(fmt::format(
        "{} does not fit on this GPU: weights ({}) {} + activations and workspaces {} + one KV "
        "block {}{} exceed {} ({:.0f}% of {}, less {} already in use); lower --max-batch-tokens, "
        "quantize, or raise --gpu-memory-utilization",
        config.model.name, options.quant.describe(), gib(weights), gib(buffers),
        gib(bytes_per_block),
        options.reserved_bytes > 0
            ? fmt::format(" + the draft model's {} and its KV block {}",
                          gib(options.reserved_bytes), gib(options.reserved_bytes_per_kv_block))
            : "",
        gib(std::max<int64_t>(budget, 0)), 100 * options.gpu_memory_utilization, gib(total_bytes),
        gib(total_bytes - free_bytes)));
  }
  return blocks;
}

void warm_gemms_as_asked(CudaBackend& backend, const CudaBackendOptions& options) {
  if (options.warm_gemm_rows > 0) {
    backend.warm_gemms(options.warm_gemm_rows);
  } else if (options.tuning.projection.lt_tune) {
    backend.warm_gemms(options.max_batch_tokens);  // every bucket timed before serving
  }
}

}  // namespace cuda

namespace {

// SmoothQuant's factors from one pass of the bf16 model over quant.calibration_tokens random
// tokens (the CPU reference draws the same tokens, calibration_tokens(..., seed 0)).
std::shared_ptr<const SmoothingFactors> calibrate(const LlamaConfig& config,
                                                  const TensorSource& source,
                                                  const CudaBackendOptions& options) {
  const int64_t tokens = options.quant.calibration_tokens;
  CudaBackendOptions plain = options;
  plain.quant = QuantConfig{};
  plain.fusion = false;
  plain.cuda_graphs = false;
  plain.max_sequences = 1;
  plain.max_batch_tokens = std::max<int64_t>(tokens, 16);
  plain.max_kv_tokens = tokens;
  const int64_t blocks = cuda::kv_blocks_that_fit(config, plain);
  cuda::CudaBackend backend(config, quantizing_loader(source, config, {}, nullptr), plain, blocks);
  SequenceChunk chunk;
  chunk.tokens = calibration_tokens(config.model.vocab_size, tokens, /*seed=*/0);
  for (int64_t b = 0; b < backend.kv_layout().blocks_for(tokens); ++b) {
    chunk.block_table.push_back(static_cast<int32_t>(b));
  }
  backend.start_smoothquant_stats();
  backend.forward({{chunk}});
  return std::make_shared<SmoothingFactors>(
      smoothing_factors(backend.finish_smoothquant_stats(), options.quant.smoothquant_alpha));
}

}  // namespace

int64_t cuda_backend_fixed_bytes(const LlamaConfig& config, const CudaBackendOptions& options) {
  const CudaBackendOptions o = cuda::resolved_options(config, options);
  return cuda::DeviceWeights::bytes_for(config, o.quant, cuda::lm_head_rows(config, o)) +
         cuda::buffers_for(config, o).bytes();
}

int64_t cuda_kv_block_bytes(const LlamaConfig& config, const CudaBackendOptions& options) {
  const KvCacheLayout block = kv_cache_layout(config.model, options.block_size, 1);
  return cuda::KvStorage::bytes_per_block(block, options.quant.kv);
}

std::unique_ptr<Backend> make_cuda_backend(const LlamaConfig& config, const TensorSource& source,
                                           const CudaBackendOptions& requested,
                                           const Checkpoint* checkpoint) {
  CudaBackendOptions options = cuda::resolved_options(config, requested);
  cuda::check_backend_options(config, options);
  std::shared_ptr<const SmoothingFactors> smoothing = options.smoothing;
  if (options.quant.activations == DType::int8 && smoothing == nullptr) {
    if (checkpoint != nullptr && config.gptq) {
      throw InputError(
          "--activations int8 needs a bf16 checkpoint: SmoothQuant migrates the "
          "weights before quantizing them, and this one is GPTQ-quantized");
    }
    smoothing = calibrate(config, source, options);
  }
  options.smoothing = smoothing;
  const WeightLoader loader =
      checkpoint != nullptr
          ? checkpoint_weight_loader(*checkpoint, config, options.quant, smoothing)
          : quantizing_loader(source, config, options.quant, smoothing);
  const int64_t blocks = cuda::kv_blocks_that_fit(config, options);
  auto backend = std::make_unique<cuda::CudaBackend>(config, loader, options, blocks);
  cuda::warm_gemms_as_asked(*backend, options);
  return backend;
}

int64_t cuda_gemm_plans(const Backend& backend) {
  if (const auto* group = dynamic_cast<const cuda::TensorParallelCudaBackend*>(&backend)) {
    return group->gemm_plans();
  }
  const auto* cuda = dynamic_cast<const cuda::CudaBackend*>(&backend);
  return cuda == nullptr ? 0 : static_cast<int64_t>(cuda->gemm_plans());
}

int64_t cuda_persistent_decode_passes(const Backend& backend) {
  const auto* cuda = dynamic_cast<const cuda::CudaBackend*>(&backend);
  return cuda == nullptr ? 0 : cuda->persistent_decode_passes();
}

}  // namespace inferlab::engine
