#pragma once
#include <span>

namespace inferlab::engine {

// What a rank of the CPU reference's tensor-parallel group needs of its peers: the collectives
// CpuBackend::forward calls after the row-parallel O and down projections and the vocab-parallel
// LM head. Two implementations: HostCommunicator (engine/host_communicator.hpp: ranks are threads
// of one process) and TcpCollectives (engine/tp/tcp_collectives.hpp: ranks are processes, on
// one host or several). Both give every rank the same bits as the other would:
//  - every rank calls each collective in the same order, with the same lengths (as with NCCL);
//  - all_reduce_sum adds the ranks' buffers in rank order 0, 1, ..., N-1, so every rank holds the
//    same bits afterwards;
//  - all_gather concatenates every rank's `local` in rank order (lengths may differ by rank; out
//    must hold their sum).
// A call returns once every rank's part has arrived; a peer that failed makes it throw rather
// than wait forever.
class HostCollectives {
 public:
  virtual ~HostCollectives() = default;
  virtual void all_reduce_sum(int rank, std::span<float> data) = 0;
  virtual void all_gather(int rank, std::span<const float> local, std::span<float> out) = 0;
};

}  // namespace inferlab::engine
