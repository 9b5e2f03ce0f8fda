#include "test_support.hpp"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace inferlab::testing {

namespace {
std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

CommandResult run_command(const std::string& command_line) {
  static int counter = 0;
  auto dir = std::filesystem::temp_directory_path() /
             ("inferlab_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::filesystem::create_directories(dir);
  std::string cmd =
      command_line + " >" + (dir / "out").string() + " 2>" + (dir / "err").string() + " </dev/null";
  int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  std::filesystem::remove_all(dir);
  return r;
}

CommandResult run_inferlab(const std::string& args) {
  return run_command(inferlab_binary() + " " + args);
}

std::string test_data_dir() {
  return INFERLAB_TEST_DATA_DIR;
}
std::string build_dir() {
  return INFERLAB_BUILD_DIR;
}
std::string cmake_command() {
  return INFERLAB_CMAKE_COMMAND;
}
std::string inferlab_binary() {
  return INFERLAB_BINARY;
}

}  // namespace inferlab::testing
