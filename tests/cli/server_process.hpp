#pragma once
// `inferlab ARGS` as a child process for the CLI tests (a server, a tensor-parallel worker):
// started with posix_spawn (default signal dispositions, nothing blocked, as a shell starts it),
// stdout discarded, its stderr in a file, a server's port read from the "serving ... on
// http://HOST:PORT" line, its exit awaited within a limit.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

extern char** environ;

namespace inferlab::testing {

class InferlabProcess {
 public:
  // `args` after "inferlab"; `env` entries NAME=VALUE are added to the environment.
  InferlabProcess(const std::vector<std::string>& args, std::filesystem::path log,
                  const std::vector<std::string>& env = {})
      : log_(std::move(log)) {
    std::vector<std::string> argv_text = {"inferlab"};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_text = env;
    for (char** e = environ; *e != nullptr; ++e) env_text.emplace_back(*e);
    std::vector<char*> envp;
    for (auto& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);

    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&files, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&files, 2, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (int s : {SIGTERM, SIGINT, SIGPIPE}) sigaddset(&defaults, s);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (posix_spawn(&pid_, inferlab_binary().c_str(), &files, &attributes, argv.data(),
                    envp.data()) != 0) {
      pid_ = -1;
    }
    posix_spawn_file_actions_destroy(&files);
    posix_spawnattr_destroy(&attributes);
  }
  ~InferlabProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  InferlabProcess(const InferlabProcess&) = delete;
  InferlabProcess& operator=(const InferlabProcess&) = delete;

  // The port it listens on, once it says so; 0 when it exits first or `limit` passes.
  int wait_for_port(std::chrono::seconds limit = std::chrono::seconds(60)) {
    static const std::regex serving("serving .* on https?://[^ ]+:(\\d+)");
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline && pid_ > 0) {
      std::smatch m;
      const std::string text = log_text();
      if (std::regex_search(text, m, serving)) return std::stoi(m[1]);
      if (waitpid(pid_, &status_, WNOHANG) == pid_) {
        exited_ = true;
        return 0;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return 0;
  }

  void signal(int sig) const { kill(pid_, sig); }

  // The wait status once it exits; false when it has not within `limit` (then it is killed).
  bool wait_exit(std::chrono::seconds limit = std::chrono::seconds(60)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!exited_ && pid_ > 0) {
      if (waitpid(pid_, &status_, WNOHANG) == pid_) {
        exited_ = true;
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return exited_;
  }
  // Its exit code, or -1 while it runs or when a signal ended it.
  int exit_code() const { return exited_ && WIFEXITED(status_) ? WEXITSTATUS(status_) : -1; }
  bool exited_with(int code) const {
    return exited_ && WIFEXITED(status_) && WEXITSTATUS(status_) == code;
  }
  // "exit N" or "killed by signal N", for messages.
  std::string how_it_ended() const {
    if (!exited_) return "still running";
    if (WIFSIGNALED(status_)) return "killed by signal " + std::to_string(WTERMSIG(status_));
    return "exit " + std::to_string(WEXITSTATUS(status_));
  }
  std::string log_text() const {
    std::ifstream in(log_);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  pid_t pid() const { return pid_; }

 private:
  std::filesystem::path log_;
  pid_t pid_ = -1;
  int status_ = 0;
  bool exited_ = false;
};

// `inferlab server ARGS`.
class ServerProcess : public InferlabProcess {
 public:
  ServerProcess(const std::vector<std::string>& args, std::filesystem::path log,
                const std::vector<std::string>& env = {})
      : InferlabProcess(with_command("server", args), std::move(log), env) {}

 private:
  static std::vector<std::string> with_command(const char* command,
                                               const std::vector<std::string>& args) {
    std::vector<std::string> all = {command};
    all.insert(all.end(), args.begin(), args.end());
    return all;
  }
};

}  // namespace inferlab::testing
