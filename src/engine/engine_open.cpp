// engine::open: what every front end (the CLI, the server, the Python binding, tests) calls to
// get an engine: the model reference resolved (a checkpoint folder or a shipped name), the
// device, tensor-parallel ranks, number formats and memory checked, the backend(s) made.
#include "engine/engine_open.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

#include "engine/attention_head_dims.hpp"
#include "engine/checkpoint.hpp"
#include "engine/cpu/cpu_backend.hpp"
#include "engine/cuda_backend.hpp"
#include "engine/init_weights.hpp"
#include "engine/moe_support.hpp"
#include "engine/quant/moe_quantization.hpp"
#include "engine/quant/quantized_model.hpp"
#include "engine/speculative.hpp"
#include "engine/tensor_source.hpp"
#include "engine/tp/process_open.hpp"
#include "engine/tp/shard.hpp"
#include "engine/tp/tp_cpu_backend.hpp"
#include "util/data_dir.hpp"
#include "util/error.hpp"

namespace inferlab::engine {

bool is_checkpoint_folder(const std::string& model) {
  std::error_code ec;
  return std::filesystem::is_regular_file(std::filesystem::path(model) / "config.json", ec);
}

std::filesystem::path tokenizer_path(const std::string& model, const std::string& tokenizer) {
  if (!tokenizer.empty()) return tokenizer;
  if (!model.empty() && is_checkpoint_folder(model)) {
    auto own = std::filesystem::path(model) / "tokenizer.json";
    std::error_code ec;
    if (std::filesystem::is_regular_file(own, ec)) return own;
    throw InputError("checkpoint '" + model + "' has no tokenizer.json; give --tokenizer FILE");
  }
  return fetched_tokenizer_dir("llama3") / "tokenizer.json";
}

LlamaModel load_engine_model(const std::string& model, uint64_t seed) {
  if (is_checkpoint_folder(model)) return load_llama_model(model);
  LlamaConfig config = load_llama_config(model);
  LlamaWeights weights = random_llama_weights(config, seed);
  return {std::move(config), std::move(weights)};
}

std::string resolve_device(const std::string& device) {
  if (device == "auto") return cuda_device_available() ? "cuda" : "cpu";
  if (device == "cpu" || device == "cuda") return device;
  throw InputError("unknown --device '" + device + "'; known: auto, cpu, cuda");
}

void check_cpu_memory(const LlamaConfig& config, int64_t kv_tokens, int64_t tp) {
  double physical_bytes =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  // Tensor parallelism replicates the embedding on every rank (and builds the shards from the
  // whole model's weights: a second copy while they are made).
  double needed_bytes =
      static_cast<double>(cpu_backend_bytes(config, kv_tokens)) * (tp > 1 ? 2.0 : 1.0) +
      4.0 * static_cast<double>((tp - 1) * config.model.embedding_params());
  if (needed_bytes > 0.9 * physical_bytes) {
    throw InputError(fmt::format(
        "{} on the CPU needs {:.1f} GB (fp32 weights and KV cache for {} tokens); this machine "
        "has {:.1f} GB",
        config.model.name, needed_bytes / 1e9, kv_tokens, physical_bytes / 1e9));
  }
}

QuantConfig resolved_quant(const LlamaConfig& config, const EngineOptions& options) {
  QuantConfig quant = options.quant;
  if (options.weights_from_checkpoint) quant.weights = checkpoint_weight_format(config);
  // A GPTQ checkpoint's int4 groups are its own.
  if (config.gptq && quant.weights == DType::int4) quant.group_size = config.gptq->group_size;
  return quant;
}

CudaBackendOptions cuda_backend_options(const EngineOptions& options, const QuantConfig& quant) {
  CudaBackendOptions cuda;
  cuda.gpu_memory_utilization = options.gpu_memory_utilization;
  cuda.max_batch_tokens = options.max_batch_tokens;
  cuda.max_sequences = options.max_sequences;
  cuda.block_size = options.block_size;
  cuda.cuda_graphs = options.cuda_graphs;
  cuda.max_kv_tokens = options.kv_pool_tokens;
  cuda.reserved_bytes = options.reserved_bytes;
  cuda.reserved_bytes_per_kv_block = options.reserved_bytes_per_kv_block;
  cuda.gemv = options.gemv;
  cuda.fusion = options.fusion;
  cuda.naive_attention = options.naive_attention;
  cuda.warm_gemm_rows = options.warm_gemm_rows;
  cuda.quant = quant;
  cuda.tuning = options.tuning;
  // A switch for checking the GPU sampler against the host's: logits to the host, picked there.
  cuda.sample_on_device = !options.tuning.host_sampling;
  return cuda;
}

namespace {

void check_cache_holds(const Backend& backend, int64_t kv_tokens) {
  if (kv_tokens > backend.kv_layout().slots()) {
    throw InputError(fmt::format("the KV cache holds {} tokens on this GPU; {} are needed",
                                 backend.kv_layout().slots(), kv_tokens));
  }
}

}  // namespace

std::unique_ptr<Backend> open_backend(const std::string& model, const EngineOptions& options) {
  const LlamaConfig config = load_llama_config(model);
  const QuantConfig quant = resolved_quant(config, options);
  // (make_cuda_backend checks it too; here before any tensor-parallel rank is started.)
  if (options.device == "cuda") {
    if (const std::string refusal = cuda_moe_refusal(config, options.tp); !refusal.empty()) {
      throw InputError(refusal);
    }
    check_moe_quantization(config, quant);
  }
  if (options.device == "cuda" && !attention_head_dim_supported(config.model.head_dim)) {
    throw InputError(cuda_head_dim_refusal(config.model.name, config.model.head_dim));
  }
  if (options.device == "cpu") {
    // The CPU factories check these again on the loaded model; here they refuse before the
    // weights (gigabytes of fp32) are read or drawn.
    check_moe_quantization(config, quant);
    check_quant_config(quant, config.model.hidden_size, config.model.intermediate_size,
                       config.model.q_dim());
    if (options.tp > 1) check_tensor_parallel(config.model, options.tp);
    check_cpu_memory(config, options.kv_tokens, options.tp);
  } else if (options.tp > 1 && options.tp_processes.enabled) {
    check_tensor_parallel(config.model, options.tp);  // before any rank is started
  }
  if (options.tp > 1 && options.tp_processes.enabled) {
    // Rank 0 of a group of processes: the other ranks started (or awaited) and sent the model.
    auto backend = tp::open_process_group(model, options, config, quant);
    if (options.device == "cuda") check_cache_holds(*backend, options.kv_tokens);
    return backend;
  }
  if (options.device == "cpu") {
    if (options.tp > 1) {
      return make_tp_cpu_backend(load_engine_model(model, options.seed), options.tp,
                                 options.kv_tokens, options.block_size, quant);
    }
    return make_cpu_backend(load_engine_model(model, options.seed), options.kv_tokens,
                            options.block_size, quant);
  }
  // (make_cuda_backend and make_tp_cuda_backend check the GPU(s), the split, the formats and the
  // sizes before they read a weight.)
  const CudaBackendOptions cuda = cuda_backend_options(options, quant);
  auto make = [&](const TensorSource& source, const Checkpoint* checkpoint) {
    return options.tp > 1 ? make_tp_cuda_backend(config, source, cuda, options.tp)
                          : make_cuda_backend(config, source, cuda, checkpoint);
  };
  std::unique_ptr<Backend> backend;
  if (is_checkpoint_folder(model)) {
    const auto checkpoint = Checkpoint::open(model);
    check_llama_checkpoint(checkpoint, config);
    backend = make(checkpoint_tensor_source(checkpoint), &checkpoint);
  } else {
    backend = make(random_tensor_source(config, options.seed), nullptr);
  }
  check_cache_holds(*backend, options.kv_tokens);
  return backend;
}

EngineBackends open_engine(const std::string& model, const std::string& draft_model,
                           const EngineOptions& options) {
  EngineBackends backends;
  if (draft_model.empty()) {
    backends.target = open_backend(model, options);
    return backends;
  }
  const LlamaConfig draft_config = load_llama_config(draft_model);
  check_draft_vocabulary(load_llama_config(model), draft_config);
  EngineOptions target = options;
  if (options.device == "cuda") {
    // The target's pool is otherwise all that --gpu-memory-utilization leaves. The draft needs
    // its weights and buffers and a KV block for each of the target's, so the target leaves the
    // draft's fixed bytes and sizes its pool by both models' KV bytes per block: blocks =
    // (budget − both models' fixed bytes) / (target's + draft's bytes per block).
    const CudaBackendOptions draft_cuda =
        cuda_backend_options(options, resolved_quant(draft_config, options));
    target.reserved_bytes = cuda_backend_fixed_bytes(draft_config, draft_cuda);
    target.reserved_bytes_per_kv_block = cuda_kv_block_bytes(draft_config, draft_cuda);
  }
  backends.target = open_backend(model, target);
  EngineOptions draft = options;
  draft.kv_tokens = backends.target->kv_layout().slots();  // the target's blocks, no more
  draft.kv_pool_tokens = draft.kv_tokens;
  // The draft takes the room the target left: its budget is all the GPU has left (capped at the
  // target's blocks above), so that rounding in the target's allocations cannot cost it a block.
  draft.gpu_memory_utilization = 1.0;
  backends.draft = open_backend(draft_model, draft);
  return backends;
}

}  // namespace inferlab::engine
