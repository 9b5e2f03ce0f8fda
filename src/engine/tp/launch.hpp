#pragma once
// `--tp N --tp-launch processes`: rank 0 starts ranks 1..N-1 on this host as copies of its own
// executable (`inferlab tp-worker`, joining at 127.0.0.1:port), and reaps them. They never outlive
// it: each is started with PR_SET_PDEATHSIG (SIGKILL when the thread that started it ends; that
// thread lives as long as this object), and each also ends when its connection to rank 0 closes.
#include <sys/types.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace inferlab::engine::tp {

class LaunchedRanks {
 public:
  // Starts `program tp-worker --tp-rank r --tp-world world --tp-master 127.0.0.1:port
  // --tp-timeout timeout_s --tp-launched` for r in 1..world-1, with LOCAL_RANK=r (the GPU it
  // takes), stdin and stdout on /dev/null and stderr this process's. `program`: "" for this
  // executable (/proc/self/exe).
  LaunchedRanks(const std::string& program, int world, int port, double timeout_s);
  // Waits up to 5 s for each rank to exit (rank 0 has said goodbye by then), then kills it.
  ~LaunchedRanks();
  LaunchedRanks(const LaunchedRanks&) = delete;
  LaunchedRanks& operator=(const LaunchedRanks&) = delete;

  // Throws (runtime_error) when a rank has exited, saying how: for the wait while ranks join.
  void check_running();
  // Kills and reaps every rank still running (the group never formed: nobody tells them to go).
  void kill_all();
  // How rank r ended ("killed by signal 9", "exited with code 1"), waiting up to `wait_ms` for
  // it to end; "" while it runs.
  std::string exit_status(int rank, int wait_ms = 0);
  pid_t pid(int rank) const { return pids_.at(static_cast<size_t>(rank)); }

 private:
  void reap(int rank, int wait_ms);
  void shut_down();

  std::vector<pid_t> pids_;    // [rank]; 0 for rank 0
  std::vector<int> statuses_;  // waitpid's, once reaped
  std::vector<bool> reaped_;
  std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
  std::thread starter_;  // forks the ranks, then lives until the destructor (PR_SET_PDEATHSIG)
};

}  // namespace inferlab::engine::tp
