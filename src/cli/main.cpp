// The inferlab executable: argument parsing and output selection only.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "cli/field_grammar.hpp"
#include "cli/server_signals.hpp"
#include "util/error.hpp"
#include "util/field_error.hpp"

int main(int argc, char** argv) {
  // `inferlab server` drains on SIGTERM/SIGINT: one thread takes them, so every other thread
  // must have them blocked, and a thread inherits the mask of the thread that creates it. Blocked
  // first thing, before the CUDA driver, a thread pool or anything else can start a thread with
  // them unblocked: a signal the kernel handed to such a thread ran the default action and killed
  // the server without draining (issue 34: 2 of 19 SIGTERMs).
  if (argc > 1 && std::string_view(argv[1]) == "server") inferlab::cli::prepare_server_signals();
  CLI::App app{"inferlab: how long an LLM takes on given hardware, and why"};
  app.require_subcommand(1);
  inferlab::cli::register_predict(app);
  inferlab::cli::register_step(app);
  inferlab::cli::register_op(app);
  inferlab::cli::register_sweep(app);
  inferlab::cli::register_catalog(app);
  inferlab::cli::register_fit(app);
  inferlab::cli::register_probe(app);
  inferlab::cli::register_roofline(app);
  inferlab::cli::register_validate(app);
  inferlab::cli::register_simulate(app);
  inferlab::cli::register_area(app);
  inferlab::cli::register_templates(app);
  inferlab::cli::register_explore(app);
  inferlab::cli::register_serve(app);
  inferlab::cli::register_capacity(app);
  inferlab::cli::register_init_weights(app);
  inferlab::cli::register_quantize(app);
  inferlab::cli::register_tokenize(app);
  inferlab::cli::register_generate(app);
  inferlab::cli::register_bench(app);
  inferlab::cli::register_logits(app);
  inferlab::cli::register_server(app);
  inferlab::cli::register_loadgen(app);
  inferlab::cli::register_report(app);
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
