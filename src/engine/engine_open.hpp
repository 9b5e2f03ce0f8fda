#pragma once
// One way to open the engine (every front end: the CLI, the server, the Python binding, tests):
// a model reference (a checkpoint folder or a shipped name) and EngineOptions in, the backend(s)
// out, with the device resolved and the number formats, tensor-parallel degree and memory checked
// before any weight is read.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "engine/backend.hpp"
#include "engine/cuda_backend.hpp"
#include "engine/engine_tuning.hpp"
#include "engine/llama_weights.hpp"
#include "engine/quant/formats.hpp"

namespace inferlab::engine {

// True when `model` names a checkpoint folder (config.json inside) rather than a shipped model.
bool is_checkpoint_folder(const std::string& model);

// The tokenizer for `model`: `tokenizer` when given (tokenizer.json or its folder), else the
// checkpoint's own tokenizer.json, else the fetched Llama 3 tokenizer (shipped model names).
std::filesystem::path tokenizer_path(const std::string& model, const std::string& tokenizer);

// A checkpoint folder's weights, or random weights at a shipped model's real shapes (the
// values init-weights would write with this seed).
LlamaModel load_engine_model(const std::string& model, uint64_t seed);

// "cuda" or "cpu" for a device name (auto → cuda when a GPU is visible); an unknown name is an
// InputError.
std::string resolve_device(const std::string& device);

// Tensor parallelism with a process per rank (engine/tp/process_backend.hpp) instead of a thread
// per rank in this process. This process is rank 0, the driver; ranks 1..tp-1 run
// `inferlab tp-worker` and take the model and these options from it.
struct TpProcessOptions {
  bool enabled = false;  // ranks are processes (tp > 1)
  // This process starts the other ranks on this host (at 127.0.0.1, a free port); else they are
  // started by hand (on any host) and join at `master`.
  bool launch = false;
  std::string master;     // "host:port" rank 0 listens on (not with launch)
  double timeout_s = 60;  // how long rank 0 waits for the ranks to join
};

// Where to run and how big the cache and batches are.
struct EngineOptions {
  std::string device = "auto";  // auto (cuda where a GPU is present), cuda, cpu
  uint64_t seed = 0;            // random weights of a shipped model
  int64_t kv_tokens = 0;        // the cache must hold this many tokens (CPU: exactly this)
  int64_t kv_pool_tokens = 0;   // > 0: the GPU's pool holds this many, not all memory left
  int64_t max_batch_tokens = 4096;
  int64_t max_sequences = 256;
  int64_t block_size = 16;       // tokens per KV block
  bool cuda_graphs = true;       // decode steps replay captured graphs (CUDA)
  bool gemv = true;              // few rows on the engine's GEMV kernels, not cuBLASLt (CUDA)
  bool fusion = true;            // the decode GEMVs' norm prologue and epilogues (CUDA)
  bool naive_attention = false;  // materialized scores instead of the flash kernels (CUDA)
  int64_t warm_gemm_rows = 0;    // > 0: every GEMM shape up to this many rows run at start-up
  bool weights_from_checkpoint = true;  // weights "auto": the checkpoint's format (GPTQ or bf16)
  QuantConfig quant;
  double gpu_memory_utilization = 0.90;
  int64_t tp = 1;                 // tensor-parallel ranks (CPU: threads over the sharded reference)
  TpProcessOptions tp_processes;  // enabled: the ranks are processes, not threads
  // GPU: room the pool leaves for a second model (a draft: its fixed bytes, KV bytes per block).
  int64_t reserved_bytes = 0, reserved_bytes_per_kv_block = 0;
  // Kernel choices for A/B runs without rebuilding: the INFERLAB_ENGINE_* variables of the
  // environment (engine_tuning.hpp), read here once for every front end (CLI, server, Python).
  EngineTuning tuning = engine_tuning_from_environment();
};

// The number formats `config` runs in under `options`: --weights auto takes the checkpoint's own
// (a GPTQ checkpoint's int4 groups too).
QuantConfig resolved_quant(const LlamaConfig& config, const EngineOptions& options);
// The CUDA backend's options from the engine's, in `quant`.
CudaBackendOptions cuda_backend_options(const EngineOptions& options, const QuantConfig& quant);
// Refuses, before any weight is read, a CPU run of `tp` ranks that would not fit in this
// machine's memory.
void check_cpu_memory(const LlamaConfig& config, int64_t kv_tokens, int64_t tp);

// The backend for `model` on options.device (already resolved), its weights, KV cache and GEMM
// inputs as options.quant says (weights "auto": a GPTQ checkpoint's own format, else bf16). CPU:
// refused up front when its fp32 weights and cache would not fit in this machine's memory; the
// fp32 reference of the quantized model. CUDA: weights read straight from the checkpoint (or
// drawn at the shipped shapes), quantized while they load. options.tp_processes.enabled: this
// process is rank 0 of a group of processes (engine/tp/process_open.hpp), which it starts or
// waits for before it reads a weight.
std::unique_ptr<Backend> open_backend(const std::string& model, const EngineOptions& options);

// The target's backend and, with `draft_model` (a checkpoint folder or shipped name; empty:
// none), a draft model's for speculative decoding: same device, switches and block size, and a
// KV pool of the target's blocks, so the scheduler's block tables serve both
// (engine/serving_drafter.hpp). A draft whose vocabulary is not the target's is an InputError
// before any weight is read.
struct EngineBackends {
  std::unique_ptr<Backend> target, draft;
};
EngineBackends open_engine(const std::string& model, const std::string& draft_model,
                           const EngineOptions& options);

}  // namespace inferlab::engine
