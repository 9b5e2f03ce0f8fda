#pragma once
// One command line of the `inferlab` executable, run in-process: what main() does, shared with
// the Python binding (src/python), which runs the same commands with their output captured.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace inferlab::cli {

// Registers every command on `app`, grouped by job as `inferlab --help` lists them.
void register_commands(CLI::App& app);

// Runs `args` (the command and its flags, without the program's name) as the executable does:
// the command's output on std::cout, "inferlab: error: <message>" on std::cerr for an error.
// Returns the exit code: 0, 2 for bad input (an unknown command, a flag the parser refuses, an
// InputError) or 1 for a failed run. `program` is the name help shows (main: its argv[0]).
int run_command(const std::vector<std::string>& args, const std::string& program = "inferlab");

struct CommandOutput {
  int exit_code = 0;
  std::string out, err;  // what the command wrote on std::cout and std::cerr
};
// run_command with std::cout and std::cerr captured (and restored when it returns or throws).
// The streams are the process's: calls are serialized, and nothing else should write to them
// meanwhile.
CommandOutput run_command_captured(const std::vector<std::string>& args);

}  // namespace inferlab::cli
