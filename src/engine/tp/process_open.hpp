#pragma once
// Opening a tensor-parallel group whose ranks are processes (engine/tp/process_backend.hpp).
//
// Rank 0 (any engine command with `--tp N --tp-launch processes`, or `--tp-world N`) listens,
// starts ranks 1..N-1 itself (launch) or waits for them, and sends every rank the model
// reference and the engine's options as it resolved them (device, formats, KV cache size,
// seed, ...): a worker needs nothing but where rank 0 is, so tp, formats and seed cannot differ
// between ranks. A worker opens the same model: rank 0's reference (a checkpoint path must then
// be readable at that path on the worker's host, a shipped name is the same everywhere), or its
// own --model, whose config.json must hash to rank 0's (else both are refused with a message
// saying so). Each rank reads the whole model and keeps its shard (engine/tp/shard.hpp). On
// GPUs each process takes one GPU (LOCAL_RANK, else rank % GPUs) and NCCL's communicator is made
// from a unique id rank 0 sends over the rendezvous.
#include <memory>
#include <string>

#include "engine/backend.hpp"
#include "engine/engine_open.hpp"
#include "engine/tp/process_backend.hpp"
#include "engine/tp/rendezvous.hpp"

namespace inferlab::engine::tp {

// Rank 0's backend over the group (open_backend calls it for options.tp_processes.enabled;
// `config` and `quant` as it resolved them). A group of ranks started by hand serves one engine
// per process: a second call without launch is an InputError.
std::unique_ptr<Backend> open_process_group(const std::string& model, const EngineOptions& options,
                                            const LlamaConfig& config, const QuantConfig& quant);

// This process's shard as rank group.rank() of `options.tp`, its collectives meeting over `group`.
LocalRank open_local_rank(const std::string& model, const EngineOptions& options,
                          const LlamaConfig& config, const QuantConfig& quant, ProcessGroup& group);

// `inferlab tp-worker`.
struct WorkerOptions {
  int rank = 1;
  int world = 2;
  Endpoint master;
  double timeout_s = 60;
  std::string model;      // "" : rank 0's reference
  bool launched = false;  // started by rank 0 (its errors go to rank 0, which reports them)
};
// Joins rank 0, opens this rank's shard as rank 0 says and runs its commands until rank 0 says
// goodbye. InputError for a refusal (rank 0's or this rank's, told to rank 0 too); PeerLost when
// rank 0 goes without a goodbye. A rank that cannot end by itself within 10 s of losing rank 0
// (inside a collective that does not return) exits at once with code 1. `reported`, when given,
// is set when the failure thrown is known to rank 0 (it reports it) or is rank 0's own.
void run_tp_worker(const WorkerOptions& options, bool* reported = nullptr);

// What the hello carries: this build's protocol for the workers' commands (rank 0 refuses a
// worker of another).
std::string worker_fingerprint();

}  // namespace inferlab::engine::tp
