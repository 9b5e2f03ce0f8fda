#include "engine/tp/rendezvous.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <set>

#include "engine/tp/wire.hpp"
#include "util/error.hpp"

namespace inferlab::engine::tp {

namespace {

constexpr uint32_t kProtocolVersion = 1;
constexpr uint32_t kByteOrderMark = 0x01020304;

std::string seconds(std::chrono::milliseconds ms) {
  return fmt::format("{:g} s", static_cast<double>(ms.count()) / 1000.0);
}

struct AddressList {
  addrinfo* list = nullptr;
  ~AddressList() {
    if (list != nullptr) freeaddrinfo(list);
  }
};

void resolve(const Endpoint& where, bool passive, AddressList& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  const std::string port = std::to_string(where.port);
  const int status = getaddrinfo(where.host.c_str(), port.c_str(), &hints, &out.list);
  if (status != 0) {
    throw InputError(fmt::format("tensor-parallel rendezvous: cannot resolve host '{}' ({})",
                                 where.host, gai_strerror(status)));
  }
}

void set_no_delay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// A connected socket to `where`, or -1 when nothing accepts there yet.
int try_connect(const Endpoint& where, Clock::time_point until) {
  AddressList addresses;
  resolve(where, false, addresses);
  for (addrinfo* a = addresses.list; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) return fd;
    if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
      if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 1))) == 1) {
        int error = 0;
        socklen_t size = sizeof error;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size);
        if (error == 0) return fd;
      }
    }
    ::close(fd);
  }
  return -1;
}

std::vector<std::byte> hello_of(const PeerInfo& self, const GroupOptions& options) {
  WireWriter out;
  out.u32(kProtocolVersion).u32(kByteOrderMark).i32(options.rank).i32(options.world);
  out.i64(self.pid).str(self.host).str(options.fingerprint);
  return out.take();
}

std::vector<std::byte> text_payload(const std::string& text) {
  return WireWriter().str(text).take();
}

}  // namespace

std::string Endpoint::text() const {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port)
                                             : fmt::format("{}:{}", host, port);
}

Endpoint parse_endpoint(const std::string& text, const std::string& flag) {
  const auto bad = [&](const std::string& why) {
    return InputError(
        fmt::format("{} '{}': {}; give host:port (e.g. 10.0.0.1:29500)", flag, text, why));
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) throw bad("no port");
  Endpoint e;
  e.host = text.substr(0, colon);
  if (e.host.size() >= 2 && e.host.front() == '[' && e.host.back() == ']') {
    e.host = e.host.substr(1, e.host.size() - 2);
  } else if (e.host.find(':') != std::string::npos) {
    throw bad("an IPv6 address goes in brackets");
  }
  if (e.host.empty()) throw bad("no host");
  const std::string port = text.substr(colon + 1);
  const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), e.port);
  if (port.empty() || error != std::errc() || end != port.data() + port.size() || e.port < 1 ||
      e.port > 65535) {
    throw bad("the port must be a number in [1, 65535]");
  }
  return e;
}

std::string local_host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

// ---- ProcessGroup ----

ProcessGroup::ProcessGroup(PeerInfo self, const GroupOptions& options)
    : self_(std::move(self)),
      options_(options),
      peers_(static_cast<size_t>(std::max(options.world, 1))) {
  heartbeat_ = std::thread([this] { heartbeat_loop(); });
}

ProcessGroup::~ProcessGroup() {
  say_goodbye();
  std::vector<std::shared_ptr<Connection>> peers;
  {
    std::lock_guard lock(mutex_);
    peers = peers_;
  }
  for (const auto& peer : peers) {
    if (peer) peer->finish_close();
  }
  // The connections go while the group they report to is whole.
  peers.clear();
  {
    std::lock_guard lock(mutex_);
    peers.swap(peers_);
  }
  peers.clear();
}

void ProcessGroup::say_goodbye() {
  std::vector<std::shared_ptr<Connection>> peers;
  std::vector<Connection::EndHandler> handlers;
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
    peers = peers_;
    handlers.swap(handlers_);
  }
  stop_heartbeat_.notify_all();
  heartbeat_.join();
  for (const auto& peer : peers) {
    if (peer) peer->begin_close();
  }
}

void ProcessGroup::heartbeat_loop() {
  std::unique_lock lock(mutex_);
  while (!stop_heartbeat_.wait_for(lock, options_.heartbeat_interval, [&] { return stopping_; })) {
    const std::vector<std::shared_ptr<Connection>> peers = peers_;
    lock.unlock();
    for (const auto& peer : peers) {
      if (peer) peer->send_heartbeat();
    }
    lock.lock();
  }
}

void ProcessGroup::add_peer(int fd, const PeerInfo& peer) {
  auto on_end = [this](const PeerInfo& who, const std::string& why, bool clean) {
    std::vector<Connection::EndHandler> handlers;
    {
      std::lock_guard lock(mutex_);
      if (!clean && failure_.empty()) {
        failure_ = why;
        failed_rank_ = who.rank;
      }
      handlers = handlers_;
    }
    for (const auto& handler : handlers) handler(who, why, clean);
  };
  auto connection =
      std::make_shared<Connection>(fd, peer, options_.silence_limit, std::move(on_end));
  std::lock_guard lock(mutex_);
  peers_.at(static_cast<size_t>(peer.rank)) = std::move(connection);
}

Connection& ProcessGroup::connection(int rank) const {
  std::lock_guard lock(mutex_);
  if (rank < 0 || rank >= static_cast<int>(peers_.size()) || !peers_[static_cast<size_t>(rank)]) {
    throw std::logic_error(
        fmt::format("tensor-parallel rank {} has no connection to rank {}", self_.rank, rank));
  }
  return *peers_[static_cast<size_t>(rank)];
}

const PeerInfo& ProcessGroup::peer(int rank) const {
  return rank == self_.rank ? self_ : connection(rank).peer();
}

void ProcessGroup::send(int to, uint32_t tag, std::span<const std::byte> payload) {
  connection(to).send(tag, payload);
}

Message ProcessGroup::receive(int from) {
  return connection(from).receive();
}

Message ProcessGroup::receive(int from, uint32_t tag) {
  Message m = receive(from);
  if (m.tag == tag) return m;
  const PeerInfo& who = peer(from);
  if (m.tag == kTagGoodbye) throw PeerLost(from, who.describe() + " left the group");
  throw std::runtime_error(fmt::format(
      "tensor-parallel group: {} sent message {} where {} was expected (a protocol error)",
      who.describe(), m.tag, tag));
}

std::vector<std::byte> ProcessGroup::broadcast(uint32_t tag, std::span<const std::byte> payload) {
  if (rank() != 0) return receive(0, tag).payload;
  for (int r = 1; r < world(); ++r) send(r, tag, payload);
  return {payload.begin(), payload.end()};
}

void ProcessGroup::report_failure(const std::string& what, bool input_error) {
  const auto payload = WireWriter().u8(input_error ? 1 : 0).str(what).take();
  std::vector<std::shared_ptr<Connection>> peers;
  {
    std::lock_guard lock(mutex_);
    peers = peers_;
  }
  for (const auto& peer : peers) {
    try {
      if (peer) peer->send(kTagFailed, payload);
    } catch (const std::exception&) {  // that one is gone already
    }
  }
}

void ProcessGroup::on_peer_end(Connection::EndHandler handler) {
  std::lock_guard lock(mutex_);
  handlers_.push_back(std::move(handler));
}

std::string ProcessGroup::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

void ProcessGroup::throw_if_lost() const {
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) throw PeerLost(failed_rank_, failure_);
}

// ---- Rendezvous (rank 0) ----

Rendezvous::Rendezvous(const Endpoint& where) : where_(where) {
  AddressList addresses;
  resolve(where, true, addresses);
  std::string why = "no address";
  for (addrinfo* a = addresses.list; a != nullptr && fd_ < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 64) == 0) {
      fd_ = fd;
      sockaddr_storage bound{};
      socklen_t size = sizeof bound;
      getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &size);
      port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    } else {
      why = std::strerror(errno);
      ::close(fd);
    }
  }
  if (fd_ < 0) {
    throw InputError(fmt::format(
        "tensor-parallel rank 0 cannot listen on {} ({}); --tp-master names an address of rank "
        "0's own host (or 0.0.0.0) and a free port",
        where.text(), why));
  }
}

Rendezvous::~Rendezvous() {
  if (fd_ >= 0) ::close(fd_);
}

std::unique_ptr<ProcessGroup> Rendezvous::accept(const GroupOptions& options,
                                                 const std::function<void()>& still_waiting) {
  PeerInfo self{0, static_cast<int64_t>(::getpid()), local_host_name()};
  auto group = std::make_unique<ProcessGroup>(self, options);
  const auto deadline = Clock::now() + options.join_timeout;
  std::set<int> missing;
  for (int r = 1; r < options.world; ++r) missing.insert(r);
  try {
    while (!missing.empty()) {
      if (still_waiting) still_waiting();
      if (Clock::now() > deadline) {
        std::vector<std::string> names;
        for (int r : missing) names.push_back(std::to_string(r));
        throw InputError(fmt::format(
            "tensor-parallel rank{} {} of {} did not join at {} within {}; start each with "
            "`inferlab tp-worker --tp-rank R --tp-world {} --tp-master HOST:{}` (HOST: this "
            "machine's address)",
            missing.size() > 1 ? "s" : "", join_names(names), options.world, where_.text(),
            seconds(options.join_timeout), options.world, port_));
      }
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) != 1) continue;
      const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) continue;
      uint32_t protocol = 0, order = 0;
      int world = 0;
      PeerInfo peer;
      std::string fingerprint;
      try {
        const Message hello =
            read_frame(fd, std::min(deadline, Clock::now() + std::chrono::seconds(5)));
        if (hello.tag != kTagHello) throw std::runtime_error("not a hello");
        WireReader in(hello.payload, "hello");
        protocol = in.u32();
        order = in.u32();
        peer.rank = in.i32();
        world = in.i32();
        peer.pid = in.i64();
        peer.host = in.str();
        fingerprint = in.str();
      } catch (const std::exception&) {  // not one of ours: wait for the ranks
        ::close(fd);
        continue;
      }
      std::string refusal;
      if (protocol != kProtocolVersion || order != kByteOrderMark) {
        refusal =
            fmt::format("it speaks protocol {} (byte order {:#x}), rank 0 protocol {} ({:#x})",
                        protocol, order, kProtocolVersion, kByteOrderMark);
      } else if (world != options.world) {
        refusal = fmt::format("it has --tp-world {}, rank 0 {}", world, options.world);
      } else if (peer.rank < 1 || peer.rank >= options.world) {
        refusal = fmt::format("rank {} is outside 1..{}", peer.rank, options.world - 1);
      } else if (!missing.contains(peer.rank)) {
        refusal = fmt::format("rank {} has joined already", peer.rank);
      } else if (fingerprint != options.fingerprint) {
        refusal = fmt::format("its fingerprint '{}' is not rank 0's '{}'", fingerprint,
                              options.fingerprint);
      }
      if (!refusal.empty()) {
        try {
          write_frame(fd, kTagRefused, text_payload(refusal),
                      Clock::now() + std::chrono::seconds(2));
        } catch (const std::exception&) {
        }
        ::close(fd);
        throw InputError(fmt::format("{} was refused: {}", peer.describe(), refusal));
      }
      const auto welcome = WireWriter().i64(self.pid).str(self.host).take();
      try {
        write_frame(fd, kTagWelcome, welcome, Clock::now() + std::chrono::seconds(5));
      } catch (const std::exception&) {
        ::close(fd);
        continue;  // it went before it was in: it may come again
      }
      set_no_delay(fd);
      group->add_peer(fd, peer);
      missing.erase(peer.rank);
    }
  } catch (const InputError& e) {
    group->report_failure(e.what(), true);
    throw;
  } catch (const std::exception& e) {
    group->report_failure(e.what(), false);
    throw;
  }
  return group;
}

// ---- A rank other than 0 ----

std::unique_ptr<ProcessGroup> join_rendezvous(const Endpoint& master, const GroupOptions& options) {
  PeerInfo self{options.rank, static_cast<int64_t>(::getpid()), local_host_name()};
  const auto deadline = Clock::now() + options.join_timeout;
  int fd = -1;
  while ((fd = try_connect(master, std::min(deadline, Clock::now() + std::chrono::seconds(1)))) <
         0) {
    if (Clock::now() > deadline) {
      throw InputError(fmt::format(
          "tensor-parallel rank {}: no rank 0 answered at {} within {}; start the rank-0 command "
          "with --tp-master {} (or check the address)",
          options.rank, master.text(), seconds(options.join_timeout), master.text()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  Message reply;
  try {
    write_frame(fd, kTagHello, hello_of(self, options), deadline);
    reply = read_frame(fd, deadline);
  } catch (const std::exception& e) {
    ::close(fd);
    throw InputError(fmt::format("tensor-parallel rank {}: what answers at {} is not a rank 0 ({})",
                                 options.rank, master.text(), e.what()));
  }
  if (reply.tag == kTagRefused) {
    ::close(fd);
    WireReader in(reply.payload, "refusal");
    throw InputError(fmt::format("tensor-parallel rank 0 at {} refused rank {}: {}", master.text(),
                                 options.rank, in.str()));
  }
  if (reply.tag != kTagWelcome) {
    ::close(fd);
    throw InputError(fmt::format("tensor-parallel rank {}: what answers at {} is not a rank 0",
                                 options.rank, master.text()));
  }
  WireReader in(reply.payload, "welcome");
  PeerInfo root;
  root.rank = 0;
  root.pid = in.i64();
  root.host = in.str();
  set_no_delay(fd);
  auto group = std::make_unique<ProcessGroup>(self, options);
  group->add_peer(fd, root);
  return group;
}

}  // namespace inferlab::engine::tp
