#include "engine/cuda/rank_collectives.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "engine/cuda/cuda_check.hpp"
#include "engine/cuda/tp_kernels.hpp"
#include "util/error.hpp"

#ifdef INFERLAB_ENGINE_HAVE_NCCL
#include <nccl.h>
#endif

namespace inferlab::engine::cuda {

#ifdef INFERLAB_ENGINE_HAVE_NCCL

namespace {

void check_nccl(ncclResult_t status, const char* what) {
  if (status != ncclSuccess) {
    throw std::runtime_error(fmt::format("NCCL: {}: {}", what, ncclGetErrorString(status)));
  }
}

}  // namespace

struct GroupState {
  int ranks = 0;
  int64_t one_shot_max_bytes = 0, two_shot_max_bytes = 0;
  std::vector<ncclComm_t> comms;
  // The peer kernels' memory, per rank (on its GPU): two staging buffers, flags, counters.
  bool peer_access = false;
  std::vector<DeviceBuffer<__nv_bfloat16>> staging;  // [rank]: 2 × capacity
  std::vector<DeviceBuffer<uint32_t>> flags;         // [rank]: kAllReduceFlagWords
  std::vector<PeerAllReduceView> views;
  ~GroupState() {
    for (ncclComm_t comm : comms) {
      if (comm != nullptr) ncclCommDestroy(comm);
    }
  }
};

RankCollectives::RankCollectives(std::shared_ptr<GroupState> group, int rank)
    : group_(std::move(group)), rank_(rank) {}

int RankCollectives::ranks() const {
  return group_->ranks;
}

bool RankCollectives::one_shot_for(int64_t bytes) const {
  return group_->peer_access && bytes <= group_->one_shot_max_bytes && bytes % 16 == 0 &&
         bytes / 2 <= group_->views[static_cast<size_t>(rank_)].capacity;
}

bool RankCollectives::two_shot_for(int64_t bytes) const {
  return group_->peer_access && !one_shot_for(bytes) && bytes <= group_->two_shot_max_bytes &&
         bytes % 16 == 0 && bytes / 2 <= group_->views[static_cast<size_t>(rank_)].capacity;
}

void RankCollectives::all_reduce_sum(__nv_bfloat16* data, int64_t count, cudaStream_t stream) {
  if (one_shot_for(2 * count)) {
    one_shot_all_reduce(group_->views[static_cast<size_t>(rank_)], data, count, stream);
    return;
  }
  if (two_shot_for(2 * count)) {
    two_shot_all_reduce(group_->views[static_cast<size_t>(rank_)], data, count, stream);
    return;
  }
  check_nccl(ncclAllReduce(data, data, static_cast<size_t>(count), ncclBfloat16, ncclSum,
                           group_->comms[static_cast<size_t>(rank_)], stream),
             "ncclAllReduce");
}

void RankCollectives::all_gather(const float* local, float* gathered, int64_t count,
                                 cudaStream_t stream) {
  check_nccl(ncclAllGather(local, gathered, static_cast<size_t>(count), ncclFloat32,
                           group_->comms[static_cast<size_t>(rank_)], stream),
             "ncclAllGather");
}

std::vector<std::shared_ptr<RankCollectives>> make_rank_collectives(int ranks,
                                                                    int64_t one_shot_max_bytes,
                                                                    int64_t two_shot_max_bytes) {
  int devices = 0;
  INFERLAB_CUDA_CHECK(cudaGetDeviceCount(&devices));
  if (ranks < 1 || ranks > devices) {
    throw InputError(
        fmt::format("--tp {}: this machine has {} GPU{}", ranks, devices, devices == 1 ? "" : "s"));
  }
  if (ranks > kMaxPeerRanks) one_shot_max_bytes = two_shot_max_bytes = 0;
  auto group = std::make_shared<GroupState>();
  group->ranks = ranks;
  group->one_shot_max_bytes = one_shot_max_bytes;
  group->two_shot_max_bytes = two_shot_max_bytes;
  group->comms.assign(static_cast<size_t>(ranks), nullptr);
  std::vector<int> ids(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) ids[static_cast<size_t>(r)] = r;
  // NCCL connects its peers lazily, at the first collective of each kind; when that one is being
  // captured into a CUDA graph (a decode step before any prefill) the connection is refused
  // ("operation not permitted when stream is capturing") and the communicator is lost. Connect
  // everything at init instead, unless the user chose otherwise.
  setenv("NCCL_RUNTIME_CONNECT", "0", /*overwrite=*/0);
  check_nccl(ncclCommInitAll(group->comms.data(), ranks, ids.data()), "ncclCommInitAll");

  group->peer_access = one_shot_max_bytes > 0 || two_shot_max_bytes > 0;
  for (int a = 0; a < ranks && group->peer_access; ++a) {
    for (int b = 0; b < ranks; ++b) {
      int can = 0;
      if (a != b) INFERLAB_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, a, b));
      if (a != b && can == 0) group->peer_access = false;
    }
  }
  if (group->peer_access) {
    const int64_t capacity =
        std::max<int64_t>(std::max(one_shot_max_bytes, two_shot_max_bytes) / 2, 8);
    for (int r = 0; r < ranks; ++r) {
      INFERLAB_CUDA_CHECK(cudaSetDevice(r));
      for (int peer = 0; peer < ranks; ++peer) {
        if (peer == r) continue;
        const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
        if (status == cudaErrorPeerAccessAlreadyEnabled) {
          cudaGetLastError();  // clears it
        } else {
          INFERLAB_CUDA_CHECK(status);
        }
      }
      group->staging.emplace_back(static_cast<size_t>(2 * capacity));
      group->flags.emplace_back(static_cast<size_t>(kAllReduceFlagWords));
      INFERLAB_CUDA_CHECK(cudaMemset(group->flags.back().data(), 0, group->flags.back().bytes()));
    }
    for (int r = 0; r < ranks; ++r) {
      PeerAllReduceView view;
      view.rank = r;
      view.ranks = ranks;
      view.capacity = capacity;
      for (int peer = 0; peer < ranks; ++peer) {
        __nv_bfloat16* base = group->staging[static_cast<size_t>(peer)].data();
        view.staging[0][peer] = base;
        view.staging[1][peer] = base + capacity;
        view.flags[peer] = group->flags[static_cast<size_t>(peer)].data();
      }
      view.counters = group->flags[static_cast<size_t>(r)].data() + kAllReduceFlagWords - 2;
      group->views.push_back(view);
    }
    // The flags' zeros (cudaMemset runs on the legacy stream) land before any rank's stream
    // can launch the kernel that reads them.
    for (int r = 0; r < ranks; ++r) {
      INFERLAB_CUDA_CHECK(cudaSetDevice(r));
      INFERLAB_CUDA_CHECK(cudaDeviceSynchronize());
    }
    INFERLAB_CUDA_CHECK(cudaSetDevice(0));
  }
  std::vector<std::shared_ptr<RankCollectives>> members;
  for (int r = 0; r < ranks; ++r) members.push_back(std::make_shared<RankCollectives>(group, r));
  return members;
}

void RankCollectives::abort_group() {
  for (ncclComm_t& comm : group_->comms) {
    if (comm != nullptr) ncclCommAbort(comm);
    comm = nullptr;
  }
}

// ---- A group of processes, one GPU each: this process's rank only ----

std::shared_ptr<RankCollectives> make_process_rank_collectives(int rank, int ranks) {
  auto group = std::make_shared<GroupState>();
  group->ranks = ranks;
  group->one_shot_max_bytes = 0;
  group->peer_access = false;  // NCCL always
  group->comms.assign(static_cast<size_t>(ranks), nullptr);
  return std::make_shared<RankCollectives>(group, rank);
}

std::vector<char> nccl_unique_id() {
  ncclUniqueId id;
  check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  return std::vector<char>(id.internal, id.internal + sizeof id.internal);
}

void RankCollectives::connect(const std::vector<char>& unique_id) {
  ncclUniqueId id;
  if (unique_id.size() != sizeof id.internal) {
    throw std::runtime_error("NCCL: the unique id rank 0 sent has the wrong size");
  }
  std::copy(unique_id.begin(), unique_id.end(), id.internal);
  // As make_rank_collectives: peers connected at init, not at a first collective being captured.
  setenv("NCCL_RUNTIME_CONNECT", "0", /*overwrite=*/0);
  ncclComm_t comm = nullptr;
  check_nccl(ncclCommInitRank(&comm, group_->ranks, id, rank_), "ncclCommInitRank");
  group_->comms[static_cast<size_t>(rank_)] = comm;
}

#else  // a build without NCCL

struct GroupState {};

RankCollectives::RankCollectives(std::shared_ptr<GroupState> group, int rank)
    : group_(std::move(group)), rank_(rank) {}
int RankCollectives::ranks() const {
  return 1;
}
bool RankCollectives::one_shot_for(int64_t) const {
  return false;
}
bool RankCollectives::two_shot_for(int64_t) const {
  return false;
}
void RankCollectives::all_reduce_sum(__nv_bfloat16*, int64_t, cudaStream_t) {}
void RankCollectives::all_gather(const float*, float*, int64_t, cudaStream_t) {}
std::vector<std::shared_ptr<RankCollectives>> make_rank_collectives(int ranks, int64_t, int64_t) {
  throw InputError(fmt::format(
      "--tp {} --device cuda: this build has no NCCL (it was not found beside the CUDA toolkit)",
      ranks));
}
void RankCollectives::abort_group() {}
void RankCollectives::connect(const std::vector<char>&) {}
std::shared_ptr<RankCollectives> make_process_rank_collectives(int, int ranks) {
  throw InputError(fmt::format(
      "--tp {} --device cuda: this build has no NCCL (it was not found beside the CUDA toolkit)",
      ranks));
}
std::vector<char> nccl_unique_id() {
  return {};
}

#endif

}  // namespace inferlab::engine::cuda
