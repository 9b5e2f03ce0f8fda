#include "engine/tp/tcp_collectives.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace inferlab::engine::tp {

namespace {

enum : uint32_t {
  kTagReducePart = kFirstUserTag + 100,
  kTagReduceSum,
  kTagGatherPart,
  kTagGathered,
};

void check_rank(const ProcessGroup& group, int rank) {
  if (rank != group.rank()) {
    throw std::logic_error(
        fmt::format("TcpCollectives: called as rank {} in rank {}'s process", rank, group.rank()));
  }
}

// Copies a message's floats into `out`, which they must fill exactly.
void copy_floats(const Message& m, std::span<float> out, const PeerInfo& from, const char* what) {
  if (m.payload.size() != out.size_bytes()) {
    throw std::runtime_error(fmt::format(
        "tensor-parallel group: {} sent {} bytes for {}, {} were expected (the ranks disagree)",
        from.describe(), m.payload.size(), what, out.size_bytes()));
  }
  std::memcpy(out.data(), m.payload.data(), out.size_bytes());
}

}  // namespace

void TcpCollectives::all_reduce_sum(int rank, std::span<float> data) {
  check_rank(group_, rank);
  if (group_.rank() != 0) {
    group_.send(0, kTagReducePart, std::as_bytes(data));
    copy_floats(group_.receive(0, kTagReduceSum), data, group_.peer(0), "an all-reduce's sum");
    return;
  }
  // HostCommunicator's order: rank 0's part, then each other rank's added in turn.
  std::vector<float> sum(data.begin(), data.end()), part(data.size());
  for (int r = 1; r < group_.world(); ++r) {
    copy_floats(group_.receive(r, kTagReducePart), part, group_.peer(r), "an all-reduce");
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += part[i];
  }
  for (int r = 1; r < group_.world(); ++r) {
    group_.send(r, kTagReduceSum, std::as_bytes(std::span<const float>(sum)));
  }
  std::copy(sum.begin(), sum.end(), data.begin());
}

void TcpCollectives::all_gather(int rank, std::span<const float> local, std::span<float> out) {
  check_rank(group_, rank);
  if (group_.rank() != 0) {
    group_.send(0, kTagGatherPart, std::as_bytes(local));
    copy_floats(group_.receive(0, kTagGathered), out, group_.peer(0), "an all-gather's result");
    return;
  }
  if (local.size() > out.size()) {
    throw std::invalid_argument("all_gather: the output does not hold every rank's part");
  }
  std::copy(local.begin(), local.end(), out.begin());
  size_t offset = local.size();
  for (int r = 1; r < group_.world(); ++r) {
    const Message m = group_.receive(r, kTagGatherPart);
    const size_t count = m.payload.size() / sizeof(float);
    if (m.payload.size() % sizeof(float) != 0 || count > out.size() - offset) {
      throw std::runtime_error(
          fmt::format("tensor-parallel group: {}'s part of an all-gather does not fit the output",
                      group_.peer(r).describe()));
    }
    std::memcpy(out.data() + offset, m.payload.data(), m.payload.size());
    offset += count;
  }
  if (offset != out.size()) {
    throw std::invalid_argument("all_gather: the output does not hold every rank's part");
  }
  for (int r = 1; r < group_.world(); ++r) {
    group_.send(r, kTagGathered, std::as_bytes(std::span<const float>(out)));
  }
}

}  // namespace inferlab::engine::tp
