#pragma once
#include <span>

#include "engine/host_collectives.hpp"
#include "engine/tp/rendezvous.hpp"

namespace inferlab::engine::tp {

// HostCollectives between the processes of a ProcessGroup, for the CPU reference: a star through
// rank 0. Every other rank sends its part to rank 0; rank 0 adds the parts in rank order 0, 1,
// ..., N-1 (the order HostCommunicator adds them in, so the sums are the same bits) or
// concatenates them, and sends the result back to every rank. A lost rank makes the call throw
// PeerLost naming it; a rank whose length differs is a protocol error.
class TcpCollectives final : public HostCollectives {
 public:
  explicit TcpCollectives(ProcessGroup& group) : group_(group) {}
  void all_reduce_sum(int rank, std::span<float> data) override;
  void all_gather(int rank, std::span<const float> local, std::span<float> out) override;

 private:
  ProcessGroup& group_;
};

}  // namespace inferlab::engine::tp
