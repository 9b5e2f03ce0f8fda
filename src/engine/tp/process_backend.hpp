#pragma once
// Tensor parallelism with a process per rank, as vLLM and SGLang run across hosts: rank 0 is the
// driver (tokenizer, scheduler, HTTP server: everything the command does) and holds its own shard;
// ranks 1..N-1 are workers (`inferlab tp-worker`) that hold theirs and run the forward passes
// rank 0 sends them. Each command goes to every worker before rank 0 runs its own shard; the
// ranks then meet in their collectives (TcpCollectives on the CPU, NCCL on GPUs) and only rank 0
// keeps the logits. Nothing comes back from a worker but its part of a KV swap.
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "engine/backend.hpp"
#include "engine/host_collectives.hpp"
#include "engine/tp/launch.hpp"
#include "engine/tp/rendezvous.hpp"

namespace inferlab::engine::tp {

// Rank 0's commands to the other ranks (tags; the payloads are engine/tp/wire.hpp's).
enum : uint32_t {
  kCmdOpen = kFirstUserTag,  // the engine's options (JSON), at the start
  kCmdReady,                 // a rank's reply to it: its KV bytes per block
  kCmdForward,               // a batch
  kCmdForwardSample,         // a batch and its SampleSpecs
  kCmdFillKvRandom,          // a seed (each rank adds its rank, as the threaded group does)
  kCmdKvToHost,              // blocks; the rank replies kCmdKvBytes
  kCmdKvBytes,
  kCmdKvFromHost,         // blocks and the rank's part of the host copy
  kCmdProfiling,          // on or off
  kCmdForwardSampleRows,  // a batch and a SampleSpec per logit row
};

// This process's rank: its shard's backend and, on the CPU, the collectives it calls (declared
// first, so that they outlive the backend).
struct LocalRank {
  std::unique_ptr<HostCollectives> collectives;
  std::unique_ptr<Backend> backend;
};

// Rank 0's Backend over the group.
class MultiProcessTpBackend final : public Backend {
 public:
  // `rank_block_bytes`: every rank's KV bytes per block (a swap's host copy holds them rank after
  // rank, as the threaded groups' do). `launched`: the ranks this process started, if it did.
  MultiProcessTpBackend(const LlamaConfig& config, std::unique_ptr<LaunchedRanks> launched,
                        std::unique_ptr<ProcessGroup> group, LocalRank local,
                        std::vector<int64_t> rank_block_bytes);
  // Says goodbye (the workers exit) and reaps the launched ranks.
  ~MultiProcessTpBackend() override;

  const LlamaConfig& config() const override { return config_; }
  // The cache as the scheduler sees it; num_kv_heads counts every rank's.
  const KvCacheLayout& kv_layout() const override { return layout_; }
  ForwardResult forward(const ForwardBatch& batch) override;
  std::vector<int32_t> forward_sample(const ForwardBatch& batch,
                                      std::span<const SampleSpec> specs) override;
  std::vector<int32_t> forward_sample_rows(const ForwardBatch& batch,
                                           std::span<const SampleSpec> row_specs) override;
  double last_forward_device_s() const override { return local_.backend->last_forward_device_s(); }
  void set_profiling(bool on) override;
  std::vector<KernelClassTime> last_forward_profile() const override {
    return local_.backend->last_forward_profile();
  }
  RoutingStats last_forward_routing() const override {
    return local_.backend->last_forward_routing();
  }
  void fill_kv_cache_random(uint64_t seed) override;
  int64_t kv_block_host_bytes() const override;
  std::unique_ptr<KvHostCopy> copy_kv_blocks_to_host(std::span<const int32_t> blocks) override;
  void copy_kv_blocks_from_host(std::span<const int32_t> blocks,
                                std::span<const std::byte> host) override;
  int ranks() const { return group_->world(); }

 private:
  // Runs `work` (commands to the ranks, then rank 0's part). A rank lost before or during it, or
  // any failure within it, leaves the group unusable: this call and every later one throw
  // PeerLost naming the rank (with how a launched rank ended), and the workers are told.
  template <typename Work>
  auto on_group(Work&& work) -> decltype(work());
  void send_to_workers(uint32_t tag, std::span<const std::byte> payload);

  LlamaConfig config_;
  KvCacheLayout layout_;
  std::unique_ptr<LaunchedRanks> launched_;  // destroyed after the group has said goodbye
  std::unique_ptr<ProcessGroup> group_;
  LocalRank local_;
  std::vector<int64_t> rank_block_bytes_;
  std::exception_ptr broken_;
};

// A worker's loop: runs rank 0's commands on `local` (rank group.rank()'s shard) until rank 0
// says goodbye. PeerLost when rank 0 goes without it.
void serve_rank_commands(ProcessGroup& group, Backend& local);

}  // namespace inferlab::engine::tp
