#pragma once
// One TCP connection between two processes of a tensor-parallel group (engine/tp/rendezvous.hpp):
// frames both ways, and a thread that reads whatever arrives, so that the peer's heartbeats never
// pile up in the socket and its loss is seen the moment it happens, whatever this process is
// doing. A frame is a header (magic "ILTP", tag, payload bytes) and its payload.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace inferlab::engine::tp {

using Clock = std::chrono::steady_clock;

// Who is at the other end of a connection.
struct PeerInfo {
  int rank = -1;
  int64_t pid = 0;
  std::string host;
  // "tensor-parallel rank 2 (pid 4711, host gpu-b)"
  std::string describe() const;
};

// A rank of the group that disconnected, fell silent past the heartbeat limit, left or reported a
// failure of its own. Every later call on the group throws it again; the server treats it as
// fatal (server/engine_failure.hpp).
class PeerLost : public std::runtime_error {
 public:
  PeerLost(int rank, const std::string& what) : std::runtime_error(what), rank_(rank) {}
  int rank() const { return rank_; }

 private:
  int rank_;
};

struct Message {
  uint32_t tag = 0;
  std::vector<std::byte> payload;
};

// Tags below kFirstUserTag belong to the connection and the rendezvous; the layers above number
// their messages from kFirstUserTag: the workers' commands (process_backend.hpp) +0..49, the open
// handshake (process_open.cpp) +50..59, the CUDA ranks' set-up (cuda/tp_cuda_process.cpp)
// +60..99, TcpCollectives +100..119.
enum : uint32_t {
  kTagHeartbeat = 1,
  kTagHello = 2,
  kTagWelcome = 3,
  kTagRefused = 4,
  kTagGoodbye = 5,  // the peer ends the group in order
  kTagFailed = 6,   // the peer failed: an input-error flag (u8) and its message
  kFirstUserTag = 16,
};

// Blocking frame I/O on a socket with a deadline, for the handshake (before a Connection owns the
// socket). std::runtime_error on a closed socket, a bad header or the deadline.
void write_frame(int fd, uint32_t tag, std::span<const std::byte> payload, Clock::time_point until);
Message read_frame(int fd, Clock::time_point until);

class Connection {
 public:
  // Called once, on the reader's thread, when the peer ends: `clean` when it said goodbye.
  using EndHandler = std::function<void(const PeerInfo& peer, const std::string& why, bool clean)>;
  // Takes the connected socket (its hello done) and starts reading. `silence_limit`: the peer is
  // lost when nothing (not even a heartbeat) arrives for that long, or when a frame cannot be
  // sent for that long.
  Connection(int fd, PeerInfo peer, std::chrono::milliseconds silence_limit, EndHandler on_end);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const PeerInfo& peer() const { return peer_; }
  // Sends a frame; PeerLost when the peer is gone (now or while sending).
  void send(uint32_t tag, std::span<const std::byte> payload);
  // A heartbeat, unless a frame is being sent right now (which tells the peer as much).
  void send_heartbeat();
  // The next frame other than a heartbeat, waiting for it. Frames that came before the peer was
  // lost are still given; after them, PeerLost (a goodbye is given as a frame, once). A peer's
  // kTagFailed frame becomes InputError (when flagged so) or PeerLost, carrying its message.
  Message receive();
  // Why the peer is gone ("" while it is there).
  std::string failure() const;
  // Closing in two steps, so that a group says goodbye to all its peers before it waits for
  // any: the goodbye (best effort, once) and the end of sending; then up to 2 s for the peer to
  // close its end, and the reader stopped. The destructor does both.
  void begin_close();
  void finish_close();

 private:
  void read_loop();
  void read_frames();
  // Records why the peer is gone (the first reason wins) and wakes the receivers.
  void end(const std::string& why, bool clean);
  void send_frame(uint32_t tag, std::span<const std::byte> payload);

  int fd_;
  PeerInfo peer_;
  std::chrono::milliseconds silence_limit_;
  EndHandler on_end_;
  std::mutex send_mutex_;
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<Message> inbox_;
  std::string failure_;  // set once
  bool ended_ = false;
  bool said_goodbye_ = false;       // this end's goodbye is sent
  bool said_goodbye_peer_ = false;  // the reader's: the peer's goodbye came
  std::atomic<bool> stopping_{false};
  std::thread reader_;
};

}  // namespace inferlab::engine::tp
