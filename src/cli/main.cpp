// The inferlab executable: argument parsing and output selection only (cli/run_command.hpp runs
// the command line; the Python binding runs the same commands).
#include <string>
#include <string_view>
#include <vector>

#include "cli/run_command.hpp"
#include "cli/server_signals.hpp"

int main(int argc, char** argv) {
  // `inferlab server` drains on SIGTERM/SIGINT: one thread takes them, so every other thread
  // must have them blocked, and a thread inherits the mask of the thread that creates it. Blocked
  // first thing, before the CUDA driver, a thread pool or anything else can start a thread with
  // them unblocked: a signal the kernel handed to such a thread ran the default action and killed
  // the server without draining (issue 34: 2 of 19 SIGTERMs).
  if (argc > 1 && std::string_view(argv[1]) == "server") inferlab::cli::prepare_server_signals();
  if (argc < 1) return inferlab::cli::run_command({});
  return inferlab::cli::run_command(std::vector<std::string>(argv + 1, argv + argc), argv[0]);
}
