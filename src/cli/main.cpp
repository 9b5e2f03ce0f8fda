// The inferlab executable: argument parsing and output selection only.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstddef>
#include <iostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/commands.hpp"
#include "cli/field_grammar.hpp"
#include "cli/server_signals.hpp"
#include "util/error.hpp"
#include "util/field_error.hpp"

namespace {

// `inferlab --help` lists the commands by job, in this order (README.md has one section per
// job). Each entry: the group's title and the functions that register its commands.
void register_by_job(CLI::App& app) {
  using Register = void (*)(CLI::App&);
  namespace cli = inferlab::cli;
  const std::vector<std::pair<const char*, std::vector<Register>>> jobs = {
      {"Measure a GPU", {cli::register_probe, cli::register_roofline}},
      {"Predict",
       {cli::register_predict, cli::register_step, cli::register_op, cli::register_sweep}},
      {"Simulate hardware",
       {cli::register_simulate, cli::register_templates, cli::register_area,
        cli::register_explore}},
      {"Serve (simulated)", {cli::register_serve, cli::register_capacity}},
      {"Run a model",
       {cli::register_generate, cli::register_bench, cli::register_init_weights,
        cli::register_quantize, cli::register_tokenize, cli::register_logits}},
      {"Serve a model", {cli::register_server, cli::register_loadgen}},
      {"Compare and fit", {cli::register_validate, cli::register_fit}},
      {"Report", {cli::register_report}},  // HTML page of predict, serve or validate
      {"Data", {cli::register_catalog}},   // `models` and `hardware`
  };
  for (const auto& [group, registers] : jobs) {
    const std::size_t before = app.get_subcommands({}).size();
    for (Register add : registers) add(app);
    const std::vector<CLI::App*> commands = app.get_subcommands({});
    for (std::size_t i = before; i < commands.size(); ++i) commands[i]->group(group);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // `inferlab server` drains on SIGTERM/SIGINT: one thread takes them, so every other thread
  // must have them blocked, and a thread inherits the mask of the thread that creates it. Blocked
  // first thing, before the CUDA driver, a thread pool or anything else can start a thread with
  // them unblocked: a signal the kernel handed to such a thread ran the default action and killed
  // the server without draining (issue 34: 2 of 19 SIGTERMs).
  if (argc > 1 && std::string_view(argv[1]) == "server") inferlab::cli::prepare_server_signals();
  CLI::App app{"inferlab: how long an LLM takes on given hardware, and why"};
  app.require_subcommand(1);
  register_by_job(app);
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> known;
    for (const CLI::App* sub : app.get_subcommands({})) known.push_back(sub->get_name());
    if (std::find(known.begin(), known.end(), argv[1]) == known.end()) {
      std::cerr << "inferlab: error: unknown command '" << argv[1]
                << "'; known: " << inferlab::join_names(known) << '\n';
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "inferlab: error: " << e.what() << " (see inferlab --help)\n";
    return 2;
  } catch (const inferlab::FieldError& e) {
    // Library errors name fields; the user sees the flags.
    std::cerr << "inferlab: error: "
              << inferlab::rename_fields(e.what(), inferlab::cli::flag_of_field) << '\n';
    return 2;
  } catch (const inferlab::InputError& e) {
    std::cerr << "inferlab: error: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "inferlab: error: run failed: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
