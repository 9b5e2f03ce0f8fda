// The Python module `inferlab._inferlab` (pybind11): the CLI's commands run in-process with their
// output captured, what each command's flags are (so that the package turns keyword arguments
// into the same flags), and the engine (engine_binding.cpp). Bindings only: no logic of its own;
// the package's __init__.py selects the output (the JSON the commands print).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "cli/run_command.hpp"
#include "cli/serve_args.hpp"
#include "python/engine_binding.hpp"
#include "util/error.hpp"

namespace py = pybind11;

namespace inferlab::python {

namespace {

// One flag as a keyword argument: its name in snake_case ("input_dist" for --input-dist),
// whether it is a switch without a value (True adds it), whether it takes several values.
using FlagInfo = std::tuple<std::string, bool, bool>;

std::vector<FlagInfo> flags_of(const CLI::App& app) {
  std::vector<FlagInfo> flags;
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_lnames().empty()) continue;  // positional
    std::string name = option->get_lnames().front();
    if (name == "help") continue;
    std::replace(name.begin(), name.end(), '-', '_');
    flags.emplace_back(name, option->get_expected_max() == 0, option->get_items_expected_max() > 1);
  }
  return flags;
}

// The flags of one of the CLI's commands, as the package's keyword arguments.
std::vector<FlagInfo> command_flags(const std::string& command) {
  CLI::App app;
  cli::register_commands(app);
  std::vector<std::string> known;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == command) return flags_of(*sub);
    known.push_back(sub->get_name());
  }
  throw InputError("unknown command '" + command + "'; known: " + join_names(known));
}

// The workload's flags (serve's `workload` dict): those `loadgen` also takes.
std::vector<FlagInfo> workload_flags() {
  CLI::App app;
  cli::ServeArgs args;
  cli::add_workload_options(&app, args, /*with_rate=*/true);
  return flags_of(app);
}

}  // namespace
}  // namespace inferlab::python

PYBIND11_MODULE(_inferlab, m) {
  using namespace inferlab;
  using namespace inferlab::python;
  m.doc() = "inferlab's C++ library; use the `inferlab` package, not this module";
  m.attr("__version__") = INFERLAB_VERSION;
  // Bad input (the library's InputError, the CLI's parse errors in Engine options) is a
  // ValueError with the library's message; pybind11 makes other std::exceptions RuntimeErrors.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  m.def(
      "run_command",
      [](const std::vector<std::string>& args) {
        cli::CommandOutput result;
        {
          py::gil_scoped_release release;
          result = cli::run_command_captured(args);
        }
        // Bytes: a command's text output need not be valid UTF-8 (the package decodes it).
        return py::make_tuple(result.exit_code, py::bytes(result.out), py::bytes(result.err));
      },
      py::arg("args"),
      "Runs one `inferlab` command line in-process: (exit code, stdout bytes, stderr bytes).");
  m.def("command_flags", &command_flags, py::arg("command"),
        "A command's flags as (snake_case name, is a switch, takes several values), without "
        "--help (the package checks for --format and sets it itself).");
  m.def("workload_flags", &workload_flags, "The workload's flags, as command_flags gives them.");
  bind_engine(m);
}
