#include "engine/tp/exit_watchdog.hpp"

#include <cstdio>
#include <cstdlib>
#include <thread>

namespace inferlab::engine::tp {

void exit_unless_ended_within(std::chrono::milliseconds grace, std::string message) {
  std::thread([grace, message = std::move(message)] {
    std::this_thread::sleep_for(grace);
    std::fprintf(stderr, "inferlab: error: %s\n", message.c_str());
    std::fflush(stderr);
    std::_Exit(1);
  }).detach();
}

}  // namespace inferlab::engine::tp
