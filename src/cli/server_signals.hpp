#pragma once
// How `inferlab server` stops: SIGTERM and SIGINT drain it (no new requests, the accepted ones
// finish, exit 0); a fatal engine failure stops it the same way (then exit 1).
#include <mutex>
#include <thread>

namespace inferlab::server {
class EngineLoop;
class OpenAiServer;
}  // namespace inferlab::server

namespace inferlab::cli {

// Blocks SIGTERM and SIGINT in the calling thread, so that every thread it creates later
// inherits the block and only ServerStopper takes them; installs a handler that hands them to
// ServerStopper when the kernel delivers one to a thread that has them unblocked (one this
// process did not create with the block: a library's, started before main); ignores SIGPIPE
// (a client that went away is a failed write). Call first thing in main, before any thread.
void prepare_server_signals();

// The thread that waits for a stop signal, from the start of `inferlab server`. A signal before
// serve() ends the process at once with exit 0 (nothing was accepted yet, and loading weights may
// take minutes); during serve() it shuts the server down gracefully, and so does the loop's
// fatal failure.
class ServerStopper {
 public:
  ServerStopper();
  ~ServerStopper();  // stops watching
  ServerStopper(const ServerStopper&) = delete;
  ServerStopper& operator=(const ServerStopper&) = delete;
  // Serves `http` until a signal or `loop`'s fatal failure shuts it down; returns once it has
  // stopped and this watcher with it.
  void serve(server::OpenAiServer& http, const server::EngineLoop& loop);

 private:
  void watch();
  void stop_watching();

  std::mutex mutex_;
  server::OpenAiServer* http_ = nullptr;  // under mutex_
  const server::EngineLoop* loop_ = nullptr;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace inferlab::cli
