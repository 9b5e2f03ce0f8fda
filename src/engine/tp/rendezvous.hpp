#pragma once
// The processes of a tensor-parallel group meeting over TCP, the way torch.distributed's
// MASTER_ADDR/MASTER_PORT rendezvous works: rank 0 listens on host:port, ranks 1..N-1 connect to
// it (retrying until a timeout, since rank 0 may start after them) and say hello (protocol
// version, byte order, rank, world size, pid, host and a fingerprint that must equal rank 0's).
// What comes of it is a ProcessGroup: a star of connections through rank 0, which carries rank
// 0's commands to the others, the CPU reference's collectives (engine/tp/tcp_collectives.hpp)
// and NCCL's unique id (CUDA), and which notices a rank that goes: a closed socket at once, a
// stopped or unreachable process when its heartbeats (every second) stop for the silence limit.
// Either way the next call on the group throws PeerLost naming the rank, never a hang.
//
// The connections are not authenticated (as with torch.distributed): rank 0's port belongs on
// a trusted network.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "engine/tp/connection.hpp"

namespace inferlab::engine::tp {

// "host:port" or "[ipv6]:port"; InputError naming `flag` for anything else (no port, a port
// outside 1..65535, an empty host).
struct Endpoint {
  std::string host;
  int port = 0;
  std::string text() const;
};
Endpoint parse_endpoint(const std::string& text, const std::string& flag);

struct GroupOptions {
  int rank = 0;
  int world = 1;
  // What every rank must share to join (rank 0 refuses a hello whose fingerprint differs).
  std::string fingerprint;
  // How long rank 0 waits for every rank to join, and a rank for rank 0 to answer.
  std::chrono::milliseconds join_timeout{60'000};
  std::chrono::milliseconds heartbeat_interval{1'000};
  // A peer from which nothing (not even a heartbeat) arrives for this long is lost.
  std::chrono::milliseconds silence_limit{10'000};
};

class ProcessGroup {
 public:
  ProcessGroup(PeerInfo self, const GroupOptions& options);
  // Says goodbye to every peer (they end in order) and waits briefly for them to close.
  ~ProcessGroup();
  // The destructor's first half, for an owner with more to release before it waits: the goodbyes
  // sent and the handlers dropped (with what they hold, e.g. an NCCL communicator).
  void say_goodbye();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return self_.rank; }
  int world() const { return options_.world; }
  const PeerInfo& self() const { return self_; }
  // Rank 0 is connected to every rank, every other rank to rank 0 only.
  const PeerInfo& peer(int rank) const;
  void send(int to, uint32_t tag, std::span<const std::byte> payload);
  Message receive(int from);
  // The next message from `from`, which must carry `tag` (a goodbye: PeerLost; another tag: a
  // protocol error).
  Message receive(int from, uint32_t tag);
  // Rank 0: sends `payload` to every other rank and returns it; any other rank: returns rank 0's.
  std::vector<std::byte> broadcast(uint32_t tag, std::span<const std::byte> payload);
  // Tells every connected peer that this rank failed, with `what` (best effort): their calls
  // then throw InputError (input_error) or PeerLost carrying it.
  void report_failure(const std::string& what, bool input_error);
  // Adds a handler called on a connection's reader thread when a peer ends (engine/cuda aborts
  // NCCL with it, whose collectives would otherwise wait for the lost rank forever). Handlers
  // live as long as the group.
  void on_peer_end(Connection::EndHandler handler);
  // Why the first lost peer went; "" while every peer is there.
  std::string failure() const;
  // Throws PeerLost for the first lost peer, if any.
  void throw_if_lost() const;

  // The rendezvous's: a peer whose hello was accepted.
  void add_peer(int fd, const PeerInfo& peer);

 private:
  Connection& connection(int rank) const;
  void heartbeat_loop();

  PeerInfo self_;
  GroupOptions options_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<Connection>> peers_;  // by rank; null where not connected
  std::vector<Connection::EndHandler> handlers_;
  std::string failure_;
  int failed_rank_ = -1;
  std::condition_variable stop_heartbeat_;
  bool stopping_ = false;
  std::thread heartbeat_;
};

// Rank 0's side: the listening socket, bound when made, so that its port is known (port 0: a
// free one, for ranks this process starts itself) before the other ranks are started.
class Rendezvous {
 public:
  explicit Rendezvous(const Endpoint& where);
  ~Rendezvous();
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;
  int port() const { return port_; }
  // Waits until ranks 1..world-1 have all joined, then gives the group (options.rank is 0).
  // `still_waiting` runs about every 100 ms meanwhile and may throw (a started rank that exited).
  // InputError naming the ranks that did not come after options.join_timeout, and for a hello
  // that cannot join (another protocol, world size or fingerprint, a rank out of range or taken):
  // that rank is told why, and so is every rank already in.
  std::unique_ptr<ProcessGroup> accept(const GroupOptions& options,
                                       const std::function<void()>& still_waiting = {});

 private:
  Endpoint where_;
  int fd_ = -1;
  int port_ = 0;
};

// A rank other than 0: connects to rank 0 at `master` (retrying until options.join_timeout) and
// joins. InputError when rank 0 never answers or refuses (with its reason).
std::unique_ptr<ProcessGroup> join_rendezvous(const Endpoint& master, const GroupOptions& options);

// This machine's host name, for PeerInfo.
std::string local_host_name();

}  // namespace inferlab::engine::tp
