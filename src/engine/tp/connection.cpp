#include "engine/tp/connection.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "engine/tp/wire.hpp"
#include "util/error.hpp"

namespace inferlab::engine::tp {

namespace {

constexpr uint32_t kMagic = 0x5054'4c49;  // "ILTP" in a little-endian header
constexpr uint64_t kMaxPayloadBytes = uint64_t{1} << 40;
constexpr size_t kHeaderBytes = 16;
constexpr int kPollSliceMs = 100;

std::array<std::byte, kHeaderBytes> header_of(uint32_t tag, uint64_t length) {
  std::array<std::byte, kHeaderBytes> header{};
  std::memcpy(header.data(), &kMagic, 4);
  std::memcpy(header.data() + 4, &tag, 4);
  std::memcpy(header.data() + 8, &length, 8);
  return header;
}

int ms_until(Clock::time_point until) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, kPollSliceMs));
}

// Moves `size` bytes through the socket (send or recv), polling until `until`.
void transfer_all(int fd, std::byte* data, size_t size, bool sending, Clock::time_point until) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = sending ? ::send(fd, data + done, size - done, MSG_NOSIGNAL)
                              : ::recv(fd, data + done, size - done, 0);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) throw std::runtime_error("the connection closed");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      throw std::runtime_error(fmt::format("the connection failed ({})", std::strerror(errno)));
    }
    if (Clock::now() >= until) throw std::runtime_error("no answer in time");
    pollfd p{fd, static_cast<short>(sending ? POLLOUT : POLLIN), 0};
    ::poll(&p, 1, ms_until(until));
  }
}

}  // namespace

std::string PeerInfo::describe() const {
  return fmt::format("tensor-parallel rank {} (pid {}, host {})", rank, pid, host);
}

void write_frame(int fd, uint32_t tag, std::span<const std::byte> payload,
                 Clock::time_point until) {
  auto header = header_of(tag, payload.size());
  transfer_all(fd, header.data(), header.size(), true, until);
  transfer_all(fd, const_cast<std::byte*>(payload.data()), payload.size(), true, until);
}

Message read_frame(int fd, Clock::time_point until) {
  std::array<std::byte, kHeaderBytes> header{};
  transfer_all(fd, header.data(), header.size(), false, until);
  uint32_t magic = 0;
  uint64_t length = 0;
  Message m;
  std::memcpy(&magic, header.data(), 4);
  std::memcpy(&m.tag, header.data() + 4, 4);
  std::memcpy(&length, header.data() + 8, 8);
  if (magic != kMagic || length > (uint64_t{1} << 20)) {
    throw std::runtime_error("the peer does not speak inferlab's tensor-parallel protocol");
  }
  m.payload.resize(static_cast<size_t>(length));
  transfer_all(fd, m.payload.data(), m.payload.size(), false, until);
  return m;
}

Connection::Connection(int fd, PeerInfo peer, std::chrono::milliseconds silence_limit,
                       EndHandler on_end)
    : fd_(fd), peer_(std::move(peer)), silence_limit_(silence_limit), on_end_(std::move(on_end)) {
  reader_ = std::thread([this] { read_loop(); });
}

Connection::~Connection() {
  begin_close();
  finish_close();
  ::close(fd_);
}

void Connection::end(const std::string& why, bool clean) {
  {
    std::lock_guard lock(mutex_);
    if (ended_) return;
    ended_ = true;
    clean = clean || said_goodbye_;
    failure_ = peer_.describe() + " " + why;
  }
  arrived_.notify_all();
  if (on_end_) on_end_(peer_, failure_, clean);
}

std::string Connection::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

void Connection::send_frame(uint32_t tag, std::span<const std::byte> payload) {
  const auto header = header_of(tag, payload.size());
  const std::span<const std::byte> parts[] = {header, payload};
  for (std::span<const std::byte> part : parts) {
    size_t done = 0;
    auto progress = Clock::now();
    while (done < part.size()) {
      const ssize_t n = ::send(fd_, part.data() + done, part.size() - done, MSG_NOSIGNAL);
      if (n > 0) {
        done += static_cast<size_t>(n);
        progress = Clock::now();
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        end(fmt::format("disconnected ({})", std::strerror(errno)), false);
        throw PeerLost(peer_.rank, failure());
      }
      if (!failure().empty()) throw PeerLost(peer_.rank, failure());
      if (Clock::now() - progress > silence_limit_) {
        end(fmt::format("took nothing sent to it for {} s", silence_limit_.count() / 1000.0),
            false);
        throw PeerLost(peer_.rank, failure());
      }
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, kPollSliceMs);
    }
  }
}

void Connection::send(uint32_t tag, std::span<const std::byte> payload) {
  if (const std::string why = failure(); !why.empty()) throw PeerLost(peer_.rank, why);
  std::lock_guard lock(send_mutex_);
  send_frame(tag, payload);
}

void Connection::send_heartbeat() {
  std::unique_lock lock(send_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || !failure().empty()) return;  // a frame on its way says as much
  try {
    send_frame(kTagHeartbeat, {});
  } catch (const std::exception&) {  // end() has recorded it
  }
}

Message Connection::receive() {
  std::unique_lock lock(mutex_);
  arrived_.wait(lock, [&] { return !inbox_.empty() || ended_; });
  if (inbox_.empty()) throw PeerLost(peer_.rank, failure_);
  Message m = std::move(inbox_.front());
  inbox_.pop_front();
  lock.unlock();
  if (m.tag == kTagFailed) {
    WireReader in(m.payload, "failure report");
    const bool input_error = in.u8() != 0;
    const std::string what = in.str();
    if (input_error) throw InputError(peer_.describe() + ": " + what);
    throw PeerLost(peer_.rank, peer_.describe() + " failed: " + what);
  }
  return m;
}

void Connection::begin_close() {
  bool bye = false;
  {
    std::lock_guard lock(mutex_);
    bye = !said_goodbye_ && !ended_;
    said_goodbye_ = true;
  }
  if (bye) {
    try {
      std::lock_guard lock(send_mutex_);
      send_frame(kTagGoodbye, {});
    } catch (const std::exception&) {
    }
  }
  ::shutdown(fd_, SHUT_WR);
}

void Connection::finish_close() {
  {
    // The peer closes its end once it has read the goodbye; its frames until then are read.
    std::unique_lock lock(mutex_);
    arrived_.wait_for(lock, std::chrono::seconds(2), [&] { return ended_; });
  }
  stopping_ = true;
  if (reader_.joinable()) reader_.join();
}

void Connection::read_loop() {
  try {
    read_frames();
  } catch (const std::exception& e) {  // e.g. no memory for a frame: the peer is as good as lost
    end(fmt::format("could not be read ({})", e.what()), false);
  }
}

void Connection::read_frames() {
  std::array<std::byte, kHeaderBytes> header{};
  size_t have = 0;  // of the header, then of the payload
  bool in_payload = false;
  uint64_t length = 0;  // the payload's, from the header
  Message current;
  auto last_heard = Clock::now();
  auto deliver = [&] {
    if (current.tag == kTagHeartbeat) return;
    std::string failed;
    if (current.tag == kTagFailed) {
      try {
        WireReader in(current.payload, "failure report");
        in.u8();
        failed = "failed: " + in.str();
      } catch (const std::exception&) {
        failed = "failed";
      }
    }
    if (current.tag == kTagGoodbye) {
      said_goodbye_peer_ = true;
      // Nothing more goes to a peer that leaves: end this side too, so that its close need not
      // wait for this process's main thread to come round to it.
      ::shutdown(fd_, SHUT_WR);
    }
    {
      std::lock_guard lock(mutex_);
      inbox_.push_back(std::move(current));
    }
    arrived_.notify_all();
    if (!failed.empty()) end(failed, false);
  };
  while (!stopping_) {
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, kPollSliceMs);
    if (ready < 0 && errno != EINTR) {
      end(fmt::format("disconnected ({})", std::strerror(errno)), false);
      return;
    }
    if (ready <= 0) {
      if (Clock::now() - last_heard > silence_limit_) {
        end(fmt::format("sent nothing for {} s (no heartbeat: the process is stopped or its host "
                        "cannot be reached)",
                        silence_limit_.count() / 1000.0),
            false);
        return;
      }
      continue;
    }
    while (!stopping_) {
      if (in_payload && have == current.payload.size() && have < length) {
        // The payload's buffer grows as its bytes come, so that a header alone (a peer's bug or
        // a stranger's) allocates nothing it does not send.
        current.payload.resize(static_cast<size_t>(
            std::min<uint64_t>(length, std::max<uint64_t>(2 * have, uint64_t{1} << 20))));
      }
      std::byte* target = in_payload ? current.payload.data() + have : header.data() + have;
      const size_t wanted = (in_payload ? current.payload.size() : header.size()) - have;
      const ssize_t n = wanted == 0 ? 0 : ::recv(fd_, target, wanted, 0);
      if (n == 0 && wanted > 0) {
        end(said_goodbye_peer_ ? "left the group" : "disconnected", said_goodbye_peer_);
        return;
      }
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        end(fmt::format("disconnected ({})", std::strerror(errno)), false);
        return;
      }
      last_heard = Clock::now();
      have += static_cast<size_t>(n);
      if (!in_payload && have == header.size()) {
        uint32_t magic = 0;
        std::memcpy(&magic, header.data(), 4);
        std::memcpy(&current.tag, header.data() + 4, 4);
        std::memcpy(&length, header.data() + 8, 8);
        if (magic != kMagic || length > kMaxPayloadBytes) {
          end("sent a malformed frame", false);
          return;
        }
        in_payload = true;
        have = 0;
      }
      if (in_payload && have == length) {
        deliver();
        current = Message{};
        in_payload = false;
        have = 0;
      }
    }
  }
}

}  // namespace inferlab::engine::tp
