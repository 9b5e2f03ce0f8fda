// The watchdog of a tensor-parallel rank whose peer died (engine/tp/exit_watchdog.hpp): a process
// still blocked after the grace period ends with exit code 1 and the message; one that ends by
// itself first keeps its own exit.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "engine/tp/exit_watchdog.hpp"

namespace inferlab::engine::tp {
namespace {

TEST(ExitWatchdogDeathTest, EndsABlockedProcessWithExitOneAndTheMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        exit_unless_ended_within(std::chrono::milliseconds(100),
                                 "tensor-parallel rank 1 (pid 7) disconnected");
        std::this_thread::sleep_for(std::chrono::seconds(30));  // blocked, as on a dead peer
        std::exit(0);
      },
      ::testing::ExitedWithCode(1),
      "inferlab: error: tensor-parallel rank 1 \\(pid 7\\) disconnected");
}

TEST(ExitWatchdogDeathTest, AProcessThatEndsFirstKeepsItsOwnExit) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        exit_unless_ended_within(std::chrono::seconds(10), "never printed");
        std::_Exit(3);
      },
      ::testing::ExitedWithCode(3), "");
}

}  // namespace
}  // namespace inferlab::engine::tp
