// Tensor parallelism on GPUs with a process per rank (engine/tp/process_open.hpp): this
// process's rank, on one GPU of its host. Apart from the threaded group (tp_cuda_backend.cpp), so
// that the single-process path, validated on GPUs, stays as it was. The one-process group remains
// the default on one host: its one-shot all-reduce reads every GPU's buffers from one kernel,
// which needs the peers' memory mapped into one process (CUDA IPC handles would lift that; not
// done), and a decode step's 16 KB all-reduce is several times faster that way than through NCCL.
#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <string>

#include "engine/cuda/cuda_backend_impl.hpp"
#include "engine/cuda/tp_cuda_backend.hpp"
#include "engine/tp/exit_watchdog.hpp"
#include "engine/tp/rendezvous.hpp"
#include "engine/tp/shard.hpp"
#include "engine/tp/wire.hpp"
#include "util/error.hpp"

namespace inferlab::engine {

namespace cuda {

namespace {

// The ranks' messages while they make their backends (after process_open's).
enum : uint32_t {
  kTagKvBlocks = tp::kFirstUserTag + 60,  // a rank's KV blocks that fit → rank 0
  kTagNcclInit,                           // rank 0's pool and NCCL unique id → every rank
};

// The GPU this rank takes: LOCAL_RANK (torchrun's, and what --tp-launch processes sets), else
// rank % the GPUs this host has.
int local_device(int rank) {
  int devices = 0;
  INFERLAB_CUDA_CHECK(cudaGetDeviceCount(&devices));
  int device = rank % std::max(devices, 1);
  if (const char* local = std::getenv("LOCAL_RANK"); local != nullptr && *local != '\0') {
    const std::string text = local;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), device);
    if (error != std::errc() || end != text.data() + text.size() || device < 0 ||
        device >= devices) {
      throw InputError(fmt::format(
          "tensor-parallel rank {}: LOCAL_RANK={} names no GPU of this host, which has {}", rank,
          text, devices));
    }
  }
  return device;
}

// A rank's CudaBackend used from whichever thread calls it: the CUDA device is current per
// thread, so each call makes this rank's current first.
class ProcessRankBackend final : public Backend {
 public:
  ProcessRankBackend(int device, std::unique_ptr<CudaBackend> rank)
      : device_(device), rank_(std::move(rank)) {}
  ~ProcessRankBackend() override {
    cudaSetDevice(device_);
    rank_.reset();
  }
  const LlamaConfig& config() const override { return rank_->config(); }
  const KvCacheLayout& kv_layout() const override { return rank_->kv_layout(); }
  ForwardResult forward(const ForwardBatch& batch) override {
    current();
    return rank_->forward(batch);
  }
  std::vector<int32_t> forward_sample(const ForwardBatch& batch,
                                      std::span<const SampleSpec> specs) override {
    current();
    return rank_->forward_sample(batch, specs);
  }
  std::vector<int32_t> forward_sample_rows(const ForwardBatch& batch,
                                           std::span<const SampleSpec> row_specs) override {
    current();
    return rank_->forward_sample_rows(batch, row_specs);
  }
  double last_forward_device_s() const override { return rank_->last_forward_device_s(); }
  void set_profiling(bool on) override {
    current();
    rank_->set_profiling(on);
  }
  std::vector<KernelClassTime> last_forward_profile() const override {
    return rank_->last_forward_profile();
  }
  RoutingStats last_forward_routing() const override { return rank_->last_forward_routing(); }
  void fill_kv_cache_random(uint64_t seed) override {
    current();
    rank_->fill_kv_cache_random(seed);
  }
  int64_t kv_block_host_bytes() const override { return rank_->kv_block_host_bytes(); }
  std::unique_ptr<KvHostCopy> copy_kv_blocks_to_host(std::span<const int32_t> blocks) override {
    current();
    return rank_->copy_kv_blocks_to_host(blocks);
  }
  void copy_kv_blocks_from_host(std::span<const int32_t> blocks,
                                std::span<const std::byte> host) override {
    current();
    rank_->copy_kv_blocks_from_host(blocks, host);
  }

 private:
  void current() const { INFERLAB_CUDA_CHECK(cudaSetDevice(device_)); }
  int device_;
  std::unique_ptr<CudaBackend> rank_;
};

}  // namespace

}  // namespace cuda

std::unique_ptr<Backend> make_tp_cuda_process_rank(const LlamaConfig& config,
                                                   const TensorSource& source,
                                                   const CudaBackendOptions& requested,
                                                   tp::ProcessGroup& group) {
  const int rank = group.rank(), ranks = group.world();
  cuda::check_tensor_parallel_cuda(config, requested, ranks);
  const int device = cuda::local_device(rank);
  INFERLAB_CUDA_CHECK(cudaSetDevice(device));
  const LlamaConfig local = rank_config(config, ranks);
  CudaBackendOptions options = cuda::resolved_options(local, requested);
  options.collectives = cuda::make_process_rank_collectives(rank, ranks);
  cuda::check_backend_options(local, options);
  // A rank lost while NCCL waits for it: abort the communicator so that this rank's collective
  // returns (with an error the group turns into the lost rank's) instead of waiting forever. On
  // 4 H200s a server whose worker was killed mid-stream was still blocked 30 s later (the decode
  // graph holds more collectives of the aborted communicator): if the engine has not ended the
  // process within 5 s, the watchdog does, naming the lost rank. It is armed first, since the
  // abort itself may block.
  group.on_peer_end(
      [collectives = options.collectives](const tp::PeerInfo&, const std::string& why, bool clean) {
        if (clean) return;
        tp::exit_unless_ended_within(
            std::chrono::seconds(5),
            "run failed: " + why +
                "; the GPUs' collectives did not return within 5 s of aborting them");
        collectives->abort_group();
      });

  // Every rank's KV blocks that fit to rank 0, which sends back the smallest (the scheduler's
  // block tables index every rank's pool) with NCCL's unique id: by then every rank has passed
  // every check that could fail on it alone, so all of them reach NCCL's init, which waits for
  // all of them.
  int64_t pool = cuda::kv_blocks_that_fit(local, options);
  std::vector<char> unique_id;
  if (rank == 0) {
    for (int r = 1; r < ranks; ++r) {
      const tp::Message blocks = group.receive(r, cuda::kTagKvBlocks);
      tp::WireReader in(blocks.payload, "KV blocks message");
      pool = std::min(pool, in.i64());
    }
    unique_id = cuda::nccl_unique_id();
    const auto id = std::as_bytes(std::span<const char>(unique_id));
    group.broadcast(cuda::kTagNcclInit, tp::WireWriter().i64(pool).bytes(id).take());
  } else {
    group.send(0, cuda::kTagKvBlocks, tp::WireWriter().i64(pool).take());
    const auto message = group.receive(0, cuda::kTagNcclInit);
    tp::WireReader in(message.payload, "NCCL init message");
    pool = in.i64();
    const auto id = in.bytes();
    unique_id.assign(reinterpret_cast<const char*>(id.data()),
                     reinterpret_cast<const char*>(id.data()) + id.size());
  }
  options.collectives->connect(unique_id);
  const WeightLoader loader = quantizing_loader(sharded_tensor_source(source, config, rank, ranks),
                                                local, options.quant, nullptr);
  auto backend = std::make_unique<cuda::CudaBackend>(local, loader, options, pool);
  cuda::warm_gemms_as_asked(*backend, options);
  return std::make_unique<cuda::ProcessRankBackend>(device, std::move(backend));
}

}  // namespace inferlab::engine
