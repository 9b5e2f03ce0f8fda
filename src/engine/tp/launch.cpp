#include "engine/tp/launch.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace inferlab::engine::tp {

namespace {

std::string self_executable() {
  char path[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) throw std::runtime_error("--tp-launch processes: cannot find this executable");
  return std::string(path, static_cast<size_t>(n));
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {}", WTERMSIG(status));
  if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
  return "ended";
}

// The child between fork and exec: async-signal-safe calls only.
[[noreturn]] void exec_rank(const char* program, char* const* argv, char* const* envp,
                            pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);  // the parent went before the line above
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);  // `inferlab server` blocks SIGTERM and SIGINT
  signal(SIGPIPE, SIG_DFL);
  const int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);  // stdout is rank 0's alone (one JSON object)
  }
  syscall(SYS_close_range, 3U, ~0U, 0U);  // the server's sockets, the rendezvous's
  execve(program, argv, envp);
  const char message[] = "inferlab: error: --tp-launch processes: cannot start a rank\n";
  [[maybe_unused]] const ssize_t ignored = write(2, message, sizeof message - 1);
  _exit(127);
}

}  // namespace

LaunchedRanks::LaunchedRanks(const std::string& program, int world, int port, double timeout_s)
    : pids_(static_cast<size_t>(world), 0),
      statuses_(static_cast<size_t>(world), 0),
      reaped_(static_cast<size_t>(world), false) {
  const std::string exe = program.empty() ? self_executable() : program;
  // Everything the children need, made before fork.
  std::vector<std::vector<std::string>> args, envs;
  for (int r = 1; r < world; ++r) {
    args.push_back({exe, "tp-worker", "--tp-rank", std::to_string(r), "--tp-world",
                    std::to_string(world), "--tp-master", fmt::format("127.0.0.1:{}", port),
                    "--tp-timeout", fmt::format("{}", timeout_s), "--tp-launched"});
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::strncmp(*e, "LOCAL_RANK=", 11) != 0) env.emplace_back(*e);
    }
    env.push_back(fmt::format("LOCAL_RANK={}", r));
    envs.push_back(std::move(env));
  }
  auto pointers = [](std::vector<std::string>& strings) {
    std::vector<char*> p;
    for (auto& s : strings) p.push_back(s.data());
    p.push_back(nullptr);
    return p;
  };
  std::string error;
  bool started = false;
  std::condition_variable started_cv;
  starter_ = std::thread([&, world] {
    const pid_t parent = getpid();
    std::unique_lock lock(mutex_);
    for (int r = 1; r < world && error.empty(); ++r) {
      auto argv = pointers(args[static_cast<size_t>(r - 1)]);
      auto envp = pointers(envs[static_cast<size_t>(r - 1)]);
      const pid_t pid = fork();
      if (pid == 0) exec_rank(exe.c_str(), argv.data(), envp.data(), parent);
      if (pid < 0) error = fmt::format("cannot start rank {} ({})", r, std::strerror(errno));
      pids_[static_cast<size_t>(r)] = pid > 0 ? pid : 0;
    }
    started = true;
    started_cv.notify_all();  // under the lock: the constructor's locals are still there
    stop_.wait(lock, [&] { return stopping_; });
  });
  {
    std::unique_lock lock(mutex_);
    started_cv.wait(lock, [&] { return started; });
  }
  if (!error.empty()) {
    shut_down();  // reaps those that started
    throw std::runtime_error("--tp-launch processes: " + error);
  }
}

LaunchedRanks::~LaunchedRanks() {
  shut_down();
}

void LaunchedRanks::shut_down() {
  if (!starter_.joinable()) return;
  for (size_t r = 1; r < pids_.size(); ++r) {
    if (pids_[r] <= 0) continue;
    reap(static_cast<int>(r), 5000);
    if (!reaped_[r]) {
      kill(pids_[r], SIGKILL);
      reap(static_cast<int>(r), 5000);
    }
  }
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_.notify_all();
  starter_.join();
}

void LaunchedRanks::reap(int rank, int wait_ms) {
  const auto r = static_cast<size_t>(rank);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (!reaped_[r] && pids_[r] > 0) {
    int status = 0;
    const pid_t done = waitpid(pids_[r], &status, WNOHANG);
    if (done == pids_[r] || (done < 0 && errno == ECHILD)) {
      reaped_[r] = true;
      statuses_[r] = done == pids_[r] ? status : 0;
      break;
    }
    if (std::chrono::steady_clock::now() >= until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string LaunchedRanks::exit_status(int rank, int wait_ms) {
  if (rank < 1 || rank >= static_cast<int>(pids_.size())) return "";
  reap(rank, wait_ms);
  return reaped_[static_cast<size_t>(rank)] ? describe_status(statuses_[static_cast<size_t>(rank)])
                                            : "";
}

void LaunchedRanks::kill_all() {
  for (size_t r = 1; r < pids_.size(); ++r) {
    if (pids_[r] <= 0 || reaped_[r]) continue;
    kill(pids_[r], SIGKILL);
    reap(static_cast<int>(r), 5000);
  }
}

void LaunchedRanks::check_running() {
  for (int r = 1; r < static_cast<int>(pids_.size()); ++r) {
    const std::string status = exit_status(r);
    if (!status.empty()) {
      throw std::runtime_error(
          fmt::format("tensor-parallel rank {} (pid {}, launched on this host) {} before it joined",
                      r, pids_[static_cast<size_t>(r)], status));
    }
  }
}

}  // namespace inferlab::engine::tp
