#include "cli/server_signals.hpp"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>

#include "server/engine_loop.hpp"
#include "server/openai_server.hpp"

namespace inferlab::cli {

namespace {

// How often the watcher also looks at the handler's note and the loop's failure.
constexpr long kPollNs = 50'000'000;

// A stop signal the handler caught on a thread that had it unblocked (0: none). A lock-free
// atomic is what a signal handler may touch.
std::atomic<int> g_caught{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void note_stop_signal(int signal) {
  g_caught.store(signal);
}

sigset_t stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  return signals;
}

// A stop signal, taken within one poll interval; 0 when none came.
int take_stop_signal() {
  const sigset_t signals = stop_signals();
  const timespec wait{0, kPollNs};
  const int received = sigtimedwait(&signals, nullptr, &wait);
  if (received > 0) return received;
  return g_caught.exchange(0);
}

}  // namespace

void prepare_server_signals() {
  const sigset_t signals = stop_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Where the block did not reach, the default action would end the process without draining:
  // a handler instead (a blocked signal stays pending for sigtimedwait whatever its handler).
  struct sigaction action = {};
  action.sa_handler = note_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

ServerStopper::ServerStopper() : thread_([this] { watch(); }) {}

ServerStopper::~ServerStopper() {
  stop_watching();
}

void ServerStopper::stop_watching() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void ServerStopper::serve(server::OpenAiServer& http, const server::EngineLoop& loop) {
  {
    std::lock_guard lock(mutex_);
    http_ = &http;
    loop_ = &loop;
  }
  http.serve();
  stop_watching();  // before `http` can go: the watcher holds it
}

void ServerStopper::watch() {
  while (true) {
    const int signal = take_stop_signal();
    std::unique_lock lock(mutex_);
    if (done_) return;
    if (http_ == nullptr) {
      if (signal == 0) continue;
      std::cerr << "inferlab: shutting down: a signal came before the server was ready\n"
                << "inferlab: server stopped\n"
                << std::flush;
      std::_Exit(0);
    }
    if (signal == 0 && loop_->fatal_error().empty()) continue;
    server::OpenAiServer& http = *http_;
    lock.unlock();
    if (signal != 0) {
      std::cerr << "inferlab: shutting down: finishing the requests already accepted\n"
                << std::flush;
    }
    http.shutdown();
    return;
  }
}

}  // namespace inferlab::cli
