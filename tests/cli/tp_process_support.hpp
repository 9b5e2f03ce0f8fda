#pragma once
// What the tensor-parallel process tests share (tp_process_cli_test.cpp on the CPU,
// tp_process_cuda_test.cpp on GPUs): scratch folders, free ports, a rank 0's launched ranks, a
// long stream to kill a rank under.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <vector>

namespace inferlab::testing {

inline std::filesystem::path scratch(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("inferlab_tp_process_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A port nothing listens on (free a moment ago).
inline int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t size = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  close(fd);
  return ntohs(address.sin_port);
}

// The children of `parent` (a rank 0's launched ranks).
inline std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> children;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');  // "pid (comm) state ppid ..."
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(text.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == parent) {
      children.push_back(std::stoi(name));
    }
  }
  return children;
}

// A streamed greedy completion of `max_tokens` from the server at `port`, read on a thread of its
// own: a rank can be killed once the first chunk is here, mid-stream.
class LongStream {
 public:
  LongStream(int port, int max_tokens) {
    done_ = std::async(std::launch::async, [this, port, max_tokens] {
      httplib::Client client("127.0.0.1", port);
      client.set_read_timeout(60, 0);
      bool signalled = false;
      httplib::Request req;
      req.method = "POST";
      req.path = "/v1/completions";
      req.body = R"({"model": "ckpt", "prompt": "Hello", "max_tokens": )" +
                 std::to_string(max_tokens) +
                 R"(, "ignore_eos": true, "temperature": 0, "stream": true})";
      req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
        if (!signalled) {
          signalled = true;
          first_chunk_.set_value();
        }
        return true;
      };
      client.send(req);
    });
  }
  // Whether the first chunk came within `limit`.
  bool started(std::chrono::seconds limit) {
    return first_chunk_.get_future().wait_for(limit) == std::future_status::ready;
  }
  // Waits for the stream's end (the server gone or the completion done).
  void finish() { done_.get(); }

 private:
  std::promise<void> first_chunk_;
  std::future<void> done_;
};

}  // namespace inferlab::testing
