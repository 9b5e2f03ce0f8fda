#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend.hpp"
#include "engine/engine_tuning.hpp"
#include "engine/llama_config.hpp"
#include "engine/llama_weights.hpp"
#include "engine/quant/formats.hpp"
#include "engine/quant/smoothquant.hpp"
#include "engine/tensor_source.hpp"

namespace inferlab::engine {

namespace cuda {
class RankCollectives;
}
namespace tp {
class ProcessGroup;
}

// True when this build has the CUDA backend and a CUDA GPU is visible.
bool cuda_device_available();
// The GPU's name and memory, for reports ("" without one).
std::string cuda_device_name();

struct CudaBackendOptions {
  int64_t block_size = 16;               // tokens per KV block
  double gpu_memory_utilization = 0.90;  // share of the GPU's memory the engine may take
  int64_t max_kv_tokens = 0;             // > 0: a cache of this many tokens instead of the rest
  int64_t max_batch_tokens = 4096;       // new tokens per forward pass (activation buffers)
  int64_t max_sequences = 256;           // sequences per forward pass
  bool sample_on_device = true;          // false: logits to the host, sampled there
  // Kernel choices for A/B runs (engine_tuning.hpp; EngineOptions fills it from the environment).
  EngineTuning tuning;
  // Room the cache leaves for a second model on the GPU (speculative decoding's draft, whose pool
  // has as many blocks): its bytes beside its KV cache, and its KV bytes per block.
  int64_t reserved_bytes = 0;
  int64_t reserved_bytes_per_kv_block = 0;
  // Decode-only forward_sample calls replay a CUDA graph captured per (batch padded to a power
  // of two, context bound rounded up to a power of two), instead of launching each kernel.
  bool cuda_graphs = false;
  // Projections of few rows run the engine's GEMV kernels instead of cuBLASLt (off also with
  // tuning.projection.gemv = false).
  bool gemv = true;
  // Where the GEMV kernels run (decode): the RMSNorm inside the QKV and gate/up GEMVs, SiLU×mul
  // in the gate/up GEMV's epilogue and the residual add in the O and down GEMVs' epilogues.
  bool fusion = true;
  // The unfused attention baseline (materialized scores) instead of the flash kernels.
  bool naive_attention = false;
  // > 0: when the backend is made, run every projection once at every row count from 1 to this
  // (at most max_batch_tokens; a server's token budget per iteration) and the LM head at every
  // count of sampled rows, so that cuBLASLt's heuristic query for a new shape and the lazy
  // loading of the kernel it picks never land in a served iteration. On the H200, serving's mixed
  // iterations ran 14-38% slower per row the first time their row count came (MEASUREMENTS §26). It
  // costs start-up time; the serving commands turn it on.
  int64_t warm_gemm_rows = 0;
  // Weights, KV cache and GEMM inputs (engine/quant/formats.hpp). W8A8 migrates with
  // `smoothing` when given, else with factors from a calibration pass of the bf16 model.
  QuantConfig quant;
  std::shared_ptr<const SmoothingFactors> smoothing;
  // Tensor parallelism (engine/cuda/tp_cuda_backend.hpp): this backend is one rank of a group of
  // GPUs. Its config is the rank's (rank_config: heads, KV heads and MLP divided), its LM head
  // holds the rank's vocab rows padded to ceil(vocab / ranks), and the group's collectives run
  // after the row-parallel O and down projections and the LM head. Null: one GPU.
  std::shared_ptr<cuda::RankCollectives> collectives;
};

// Device memory the CUDA backend needs before its KV cache: the weights in options.quant's format
// (QKV and gate/up fused), activation buffers for max_batch_tokens, logits and workspaces.
int64_t cuda_backend_fixed_bytes(const LlamaConfig& config, const CudaBackendOptions& options);
// Device memory of one KV block (options.block_size tokens in options.quant.kv's format).
int64_t cuda_kv_block_bytes(const LlamaConfig& config, const CudaBackendOptions& options);

// The CUDA backend over bf16 tensors from `source` (a checkpoint or random weights), quantized
// at load as options.quant says; with `checkpoint` given and GPTQ-quantized, its modules are
// taken as stored. Throws InputError when there is no GPU, for a QuantConfig the model cannot
// run, or when the weights and a cache of at least one block per sequence do not fit in
// gpu_memory_utilization of the GPU's memory (saying the sizes, before allocating).
std::unique_ptr<Backend> make_cuda_backend(const LlamaConfig& config, const TensorSource& source,
                                           const CudaBackendOptions& options,
                                           const Checkpoint* checkpoint = nullptr);

// The CUDA backend over GPUs 0 .. ranks-1 of this machine under Megatron-style tensor
// parallelism (engine/tp/shard.hpp's split; one host thread drives each GPU): the weights drawn
// or read whole and cut per rank as they load, NCCL and the one-shot all-reduce between the
// GPUs, inside the decode graphs too. InputError when the model does not split `ranks` ways,
// the GPUs are fewer, or for what tensor parallelism does not run yet (W8A8, GPTQ checkpoints).
std::unique_ptr<Backend> make_tp_cuda_backend(const LlamaConfig& config, const TensorSource& source,
                                              const CudaBackendOptions& options, int64_t ranks);

// One rank of a tensor-parallel group whose ranks are processes (engine/tp/process_open.hpp), on
// one GPU of its host (LOCAL_RANK, else rank % GPUs): its shard cut from `source` as it loads,
// NCCL's communicator made from the unique id rank 0 sends over `group` (ncclCommInitRank), and
// a KV pool of the blocks the smallest rank's GPU holds. The all-reduces always take NCCL: the
// one-shot kernel reads its peers' buffers, which needs them mapped into one process. The same
// InputErrors as make_tp_cuda_backend; every rank checks everything that can fail on one rank
// alone before NCCL's init, which waits for every rank.
std::unique_ptr<Backend> make_tp_cuda_process_rank(const LlamaConfig& config,
                                                   const TensorSource& source,
                                                   const CudaBackendOptions& options,
                                                   tp::ProcessGroup& group);

// How many cuBLASLt GEMM shapes a CUDA backend has planned (each with its heuristic's choice of
// algorithm); 0 for any other backend. After warm_gemms, a pass of any size adds none.
int64_t cuda_gemm_plans(const Backend& backend);

// How many passes a CUDA backend has launched, or captured into a graph, with its layers in the
// persistent decode kernel (cuda/decode_layers.hpp); 0 for any other backend.
int64_t cuda_persistent_decode_passes(const Backend& backend);

}  // namespace inferlab::engine
